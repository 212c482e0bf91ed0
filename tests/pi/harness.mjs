#!/usr/bin/env node
/**
 * The test-side bridge to the real Pi packages: a long-lived JSON-lines server.
 *
 *   <node 22> tests/pi/harness.mjs --pi 1.6.0|0.58.3 [--root <install folder>]
 *
 * The install folder (default: $PINB_PI_ROOT) is the one `tests/pi/reference.py` fills
 * with `npm ci`. One request per stdin line, `{"id": n, "op": ..., ...}`; one response per
 * stdout line, `{"id": n, "result": ...}` or `{"id": n, "error": "Name: message"}`. The
 * first line written is `{"ready": {...}}` once Pi is imported.
 *
 * Ops: `answer` (a conformance query file, answered with Pi's own functions on a temp
 * copy), `open` (SessionManager.open in place), `build` (drive a SessionManager through
 * its public methods), `call` (one exported function), `bench` (Pi's own time to open a
 * file, build its context and its tree), `benchRound` (one timed open, first context and
 * tree on a fresh copy), `benchList` (`SessionManager.listAll()` over an agent folder, and
 * its rows), `ping`.
 *
 * Everything is computed by Pi; the code here only calls it, walks parent links to refuse
 * inputs on which Pi would loop forever, and maps Pi's results to plain JSON.
 */
import crypto from "node:crypto";
import { copyFileSync, mkdtempSync, readFileSync, realpathSync, rmSync } from "node:fs";
import module from "node:module";
import { tmpdir } from "node:os";
import { basename, dirname, join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { format } from "node:util";
import { pathToFileURL } from "node:url";
import v8 from "node:v8";
import vm from "node:vm";

const PACKAGES = {
    "1.6.0": "@earendil-works/pi-coding-agent",
    "0.58.3": "@mariozechner/pi-coding-agent",
};
const LEAF_COMMANDS = ["context", "llm", "tokens", "serialize", "plan"];
const HANG = { __error__: "Hang: parent cycle" };
const TREE_HANG = { __error__: "Hang: tree cycle" };

// Responses own stdout: anything Pi prints goes to stderr, where the client keeps it for
// error reports.
const writeOut = process.stdout.write.bind(process.stdout);
for (const name of ["log", "info", "debug", "warn", "error", "trace", "dir"]) {
    console[name] = (...args) => process.stderr.write(`${format(...args)}\n`);
}

function parseArgs(argv) {
    const options = { pi: undefined, root: process.env.PINB_PI_ROOT };
    for (let i = 0; i < argv.length; i++) {
        if (argv[i] === "--pi") options.pi = argv[++i];
        else if (argv[i] === "--root") options.root = argv[++i];
        else throw new Error(`unknown argument ${argv[i]}`);
    }
    if (!PACKAGES[options.pi]) throw new Error(`--pi must be one of ${Object.keys(PACKAGES).join(", ")}`);
    if (!options.root) throw new Error("no install folder: pass --root or set PINB_PI_ROOT");
    return options;
}

const options = parseArgs(process.argv.slice(2));
const VERSION = options.pi;
const IS_1X = VERSION.startsWith("1.");
const PACKAGE_DIR = join(resolve(options.root), "node_modules", PACKAGES[VERSION]);
const installed = JSON.parse(readFileSync(join(PACKAGE_DIR, "package.json"), "utf8")).version;
if (installed !== VERSION) throw new Error(`${PACKAGE_DIR} holds ${installed}, not ${VERSION}`);

// The package's `exports` map only opens the entry; prepareCompaction, estimateContextTokens,
// loadEntriesFromFile and computeFileLists live in modules behind it, so they are imported by
// file URL (the same URLs the entry imports, hence the same module instances).
const dist = (path) => pathToFileURL(join(PACKAGE_DIR, "dist", path)).href;
const importStart = performance.now();
const pi = await import(dist("index.js"));
const compaction = await import(dist("core/compaction/compaction.js"));
const compactionUtils = await import(dist("core/compaction/utils.js"));
const sessionModule = await import(dist("core/session-manager.js"));
const messagesModule = await import(dist("core/messages.js"));
const importMs = Math.round(performance.now() - importStart);
const { SessionManager } = pi;

// ---------------------------------------------------------------------------
// Determinism: migration ids and (optionally) the clock
// ---------------------------------------------------------------------------

const realRandomUUID = crypto.randomUUID;

/**
 * Run fn with crypto.randomUUID drawing 00000000-…, 00000001-…: Pi's own migration then
 * assigns the positional ids the reference data uses. Pi imports randomUUID as an ESM
 * binding of the builtin, which syncBuiltinESMExports() re-points.
 */
function withPositionalIds(fn) {
    let next = 0;
    crypto.randomUUID = () => `${(next++).toString(16).padStart(8, "0")}-0000-4000-8000-000000000000`;
    module.syncBuiltinESMExports();
    try {
        return fn();
    } finally {
        crypto.randomUUID = realRandomUUID;
        module.syncBuiltinESMExports();
    }
}

/** Run fn with a fake clock: every reading (new Date(), Date.now()) advances it by stepMs. */
function withClock(clock, fn) {
    if (!clock) return fn();
    const RealDate = Date;
    let now = typeof clock.start === "number" ? clock.start : RealDate.parse(clock.start);
    if (Number.isNaN(now)) throw new Error(`clock.start is not a date: ${clock.start}`);
    const step = clock.stepMs ?? 1;
    const tick = () => {
        const t = now;
        now += step;
        return t;
    };
    class FakeDate extends RealDate {
        constructor(...args) {
            if (args.length === 0) super(tick());
            else super(...args);
        }
        static now() {
            return tick();
        }
    }
    globalThis.Date = FakeDate;
    try {
        return fn();
    } finally {
        globalThis.Date = RealDate;
    }
}

// ---------------------------------------------------------------------------
// JSON plumbing
// ---------------------------------------------------------------------------

function errorText(error) {
    if (error instanceof Error) return `${error.name}: ${error.message}`;
    return `Error: ${String(error)}`;
}

/** JSON-ready copy of a Pi value: Sets become arrays, Maps objects (JSON drops undefined). */
function plain(value) {
    return JSON.parse(
        JSON.stringify(value, (_key, v) => {
            if (v instanceof Set) return [...v];
            if (v instanceof Map) return Object.fromEntries(v);
            return v;
        }) ?? "null",
    );
}

/** Arguments from JSON: {"$undefined": true} is undefined, {"$set": [...]} a Set. */
function decodeArg(value) {
    if (Array.isArray(value)) return value.map(decodeArg);
    if (value && typeof value === "object") {
        const keys = Object.keys(value);
        if (keys.length === 1 && keys[0] === "$undefined") return undefined;
        if (keys.length === 1 && keys[0] === "$set") return new Set(value.$set.map(decodeArg));
        return Object.fromEntries(keys.map((k) => [k, decodeArg(value[k])]));
    }
    return value;
}

/** Run fn; a throw becomes the reference data's {"__error__": "Name: message"} value. */
function capture(fn, scrub = (s) => s) {
    try {
        return { value: fn() };
    } catch (error) {
        return { error: { __error__: scrub(errorText(error)) } };
    }
}

// ---------------------------------------------------------------------------
// Cycle guards (Pi's parent walks have no cycle detection and would never return)
// ---------------------------------------------------------------------------

function entryIndex(entries) {
    // Same index Pi builds: keyed by the raw id, a later entry replacing an earlier one.
    const byId = new Map();
    for (const entry of entries) byId.set(entry.id, entry);
    return byId;
}

/** True when the parent walk from `start` (as Pi's path loops do it) never ends. */
function walkLoops(start, byId) {
    const seen = new Set();
    for (let current = start; current; current = current.parentId ? byId.get(current.parentId) : undefined) {
        if (seen.has(current)) return true;
        seen.add(current);
    }
    return false;
}

/**
 * True when getTree() would loop: its nodes are keyed by id, so a later duplicate id can
 * hang a node below its own descendant; the children-sorting walk then never ends.
 */
function treeLoops(entries) {
    const known = new Set(entries.map((e) => e.id));
    const children = new Map();
    const roots = [];
    for (const entry of entries) {
        if (entry.parentId === null || entry.parentId === entry.id || !known.has(entry.parentId)) {
            roots.push(entry.id);
        } else {
            if (!children.has(entry.parentId)) children.set(entry.parentId, []);
            children.get(entry.parentId).push(entry.id);
        }
    }
    const state = new Map(); // 1 = on the current DFS path, 2 = done
    for (const root of roots) {
        if (state.get(root) === 2) continue;
        const stack = [[root, 0]];
        state.set(root, 1);
        while (stack.length > 0) {
            const top = stack[stack.length - 1];
            const kids = children.get(top[0]) ?? [];
            if (top[1] < kids.length) {
                const child = kids[top[1]++];
                if (state.get(child) === 1) return true;
                if (state.get(child) !== 2) {
                    state.set(child, 1);
                    stack.push([child, 0]);
                }
            } else {
                state.set(top[0], 2);
                stack.pop();
            }
        }
    }
    return false;
}

// ---------------------------------------------------------------------------
// Result shapes
// ---------------------------------------------------------------------------

function treeNode(node, children) {
    const out = { id: node.entry.id, type: node.entry.type, label: node.label ?? null };
    if (IS_1X) out.labelTimestamp = node.labelTimestamp ?? null;
    return Object.assign(out, children);
}

function nestedTree(roots) {
    const convert = (node) => treeNode(node, { children: node.children.map(convert) });
    return roots.map(convert);
}

function flatTree(roots) {
    const out = [];
    const stack = roots.map((node) => [node, 0]).reverse();
    while (stack.length > 0) {
        const [node, depth] = stack.pop();
        out.push(treeNode(node, { depth }));
        for (let i = node.children.length - 1; i >= 0; i--) stack.push([node.children[i], depth + 1]);
    }
    return out;
}

function fileOpsValue(fileOps) {
    const lists = compactionUtils.computeFileLists(fileOps);
    return {
        read: [...fileOps.read],
        written: [...fileOps.written],
        edited: [...fileOps.edited],
        readFiles: lists.readFiles,
        modifiedFiles: lists.modifiedFiles,
    };
}

// Which entry a message in Pi's results came from: compaction and branch preparation
// return bare messages. Message entries' own objects get a symbol-keyed tag, which Pi's
// copies ({...message, content}) keep and JSON ignores.
const SOURCE = Symbol("pinb.sourceEntry");

function tagMessages(entries) {
    for (const entry of entries) {
        if (entry.type === "message" && entry.message && typeof entry.message === "object") entry.message[SOURCE] = entry;
    }
}

/**
 * Whether `message` is what Pi made of `entry`: the tagged object (or a copy) for message
 * entries; for the other types, what Pi's own message constructor gives for the entry,
 * compared field by field except `content` (1.6.0's context edits replace just that).
 */
function madeFrom(entry, message) {
    if (Object.hasOwn(message, SOURCE)) return message[SOURCE] === entry;
    let made;
    if (entry.type === "custom_message") {
        made = messagesModule.createCustomMessage(entry.customType, entry.content, entry.display, entry.details, entry.timestamp);
    } else if (entry.type === "branch_summary") {
        made = messagesModule.createBranchSummaryMessage(entry.summary, entry.fromId, entry.timestamp);
    } else if (entry.type === "compaction") {
        made = messagesModule.createCompactionSummaryMessage(entry.summary, entry.tokensBefore, entry.timestamp);
    } else {
        return false;
    }
    return Object.keys(made).every((k) => k === "content" || Object.is(message[k], made[k]));
}

/**
 * Name the entry each message came from ({id, index, role}, index into `entries`). The
 * messages are in entry order; `backwards` matches from the end (branch preparation keeps
 * the newest entries).
 */
function messageRefs(messages, entries, { backwards = false } = {}) {
    const refs = [];
    const step = backwards ? -1 : 1;
    let pointer = backwards ? entries.length - 1 : 0;
    for (const message of backwards ? [...messages].reverse() : messages) {
        while (pointer >= 0 && pointer < entries.length && !madeFrom(entries[pointer], message)) pointer += step;
        if (pointer < 0 || pointer >= entries.length) throw new Error(`harness: no entry produced a ${message.role} message`);
        refs.push({ id: entries[pointer].id, index: pointer, role: message.role });
        pointer += step;
    }
    return backwards ? refs.reverse() : refs;
}

// ---------------------------------------------------------------------------
// answer
// ---------------------------------------------------------------------------

function describeMigration(copy) {
    // Pi's own loader and migration on the file as it was before SessionManager.open.
    const loaded = sessionModule.loadEntriesFromFile(copy);
    const header = loaded.length > 0 ? loaded[0] : undefined;
    const versionBefore = header?.version ?? null;
    withPositionalIds(() => pi.migrateSessionEntries(loaded));
    const entries = loaded.filter((e) => e.type !== "session");
    const positions = new Map();
    entries.forEach((e, i) => positions.set(e.id, i));
    const position = (id) => (id === null || id === undefined ? null : positions.has(id) ? positions.get(id) : -1);
    return {
        fileEntries: loaded.length,
        headerVersionBefore: versionBefore,
        headerVersion: header?.version ?? null,
        entries: entries.map((e) => {
            const item = { type: e.type, hasId: typeof e.id === "string", parent: position(e.parentId) };
            if (e.type === "message") item.role = e.message && typeof e.message === "object" ? (e.message.role ?? null) : null;
            if (e.type === "compaction") {
                item.firstKept = position(e.firstKeptEntryId);
                item.hasFirstKeptIndexField = "firstKeptEntryIndex" in e;
            }
            return item;
        }),
    };
}

function planValue(path, contextTokens, preset) {
    const settings = { enabled: true, reserveTokens: preset.reserve, keepRecentTokens: preset.keep };
    let lastCompaction = -1;
    path.forEach((e, i) => {
        if (e.type === "compaction") lastCompaction = i;
    });
    const boundaryStart = lastCompaction + 1;
    const cut = pi.findCutPoint(path, boundaryStart, path.length, preset.keep);
    const prepared = compaction.prepareCompaction(path, settings);
    let preparedValue = null;
    if (prepared) {
        // One forward match over both lists: the turn prefix follows the summarised part.
        const refs = messageRefs([...prepared.messagesToSummarize, ...prepared.turnPrefixMessages], path);
        const summarised = prepared.messagesToSummarize.length;
        preparedValue = {
            firstKeptEntryId: prepared.firstKeptEntryId,
            tokensBefore: prepared.tokensBefore,
            isSplitTurn: prepared.isSplitTurn,
            messagesToSummarize: refs.slice(0, summarised),
            turnPrefixMessages: refs.slice(summarised),
            hasPreviousSummary: prepared.previousSummary !== undefined,
            previousSummary: prepared.previousSummary ?? null,
            fileOps: fileOpsValue(prepared.fileOps),
        };
    }
    return {
        params: { reserve: preset.reserve, keep: preset.keep, window: preset.window },
        pathLength: path.length,
        pathLastId: path.length > 0 ? path[path.length - 1].id : null,
        contextTokens,
        shouldCompact: pi.shouldCompact(contextTokens, preset.window, settings),
        cutPoint: {
            boundaryStart,
            boundaryEnd: path.length,
            firstKeptEntryIndex: cut.firstKeptEntryIndex,
            firstKeptEntryId: path[cut.firstKeptEntryIndex]?.id ?? null,
            turnStartIndex: cut.turnStartIndex,
            turnStartEntryId: cut.turnStartIndex >= 0 ? (path[cut.turnStartIndex]?.id ?? null) : null,
            isSplitTurn: cut.isSplitTurn,
        },
        prepared: preparedValue,
    };
}

function leafResults(sm, entries, byId, leafQuery, query, scrub) {
    const leaf = leafQuery.key === "@default" ? undefined : leafQuery.leaf;
    const commands = leafQuery.cmds ?? LEAF_COMMANDS;
    const out = {};
    // buildSessionContext walks up from the leaf, or from the last entry when the leaf is
    // missing or unknown; getBranch walks from a known leaf only.
    const start = leaf === null ? undefined : ((leaf ? byId.get(leaf) : undefined) ?? entries[entries.length - 1]);
    if (walkLoops(start, byId)) {
        for (const command of commands) out[command] = HANG;
        return out;
    }
    const context = capture(() => pi.buildSessionContext(entries, leaf), scrub);
    const then = (dependency, fn) => (dependency.error ? dependency : capture(() => fn(dependency.value), scrub));
    const llm = then(context, (c) => pi.convertToLlm(c.messages));
    const values = {
        context: () => context,
        llm: () => llm,
        tokens: () =>
            then(context, (c) => ({
                estimate: compaction.estimateContextTokens(c.messages),
                perMessage: c.messages.map((m) => pi.estimateTokens(m)),
            })),
        serialize: () => then(llm, (messages) => pi.serializeConversation(messages)),
        plan: () => {
            const path = leaf === null ? [] : leaf === undefined ? sm.getBranch() : sm.getBranch(leaf);
            const plans = {};
            for (const name of query.plans ?? []) {
                const preset = query.planPresets[name];
                const result = then(context, (c) =>
                    planValue(path, compaction.estimateContextTokens(c.messages).tokens, preset),
                );
                plans[name] = result.error ?? result.value;
            }
            return { value: plans };
        },
    };
    for (const command of commands) {
        const result = values[command]();
        out[command] = result.error ?? plain(result.value);
    }
    return out;
}

function branchValue(sm, byId, item, budgets) {
    const from = item.from ?? null;
    // Without a `from` Pi returns at once; otherwise it walks up from both ends.
    const startOf = (id) => byId.get(id || sm.getLeafId());
    if (from && (walkLoops(startOf(from), byId) || walkLoops(startOf(item.to), byId))) return HANG;
    const collected = pi.collectEntriesForBranchSummary(sm, from, item.to);
    const entries = collected.entries;
    return {
        from,
        to: item.to,
        commonAncestorId: collected.commonAncestorId,
        entryIds: entries.map((e) => e.id),
        entryTypes: entries.map((e) => e.type),
        prepare: budgets.map((budget) => {
            const prepared = pi.prepareBranchEntries(entries, budget);
            return {
                tokenBudget: budget,
                totalTokens: prepared.totalTokens,
                messages: messageRefs(prepared.messages, entries, { backwards: true }),
                fileOps: fileOpsValue(prepared.fileOps),
            };
        }),
    };
}

function answerCopy(query, copy) {
    const scrubPaths = [copy, realpathSync(copy)];
    const scrub = (text) => scrubPaths.reduce((s, p) => s.split(p).join("<path>"), text);
    // Loader first: SessionManager.open may rewrite the copy (migration, invalid file).
    const migrate = capture(() => describeMigration(copy), scrub);
    const opened = capture(() => withPositionalIds(() => SessionManager.open(copy, dirname(copy))), scrub);
    const result = {};
    if (opened.error) {
        // 1.6.0 refuses invalid files: every value of the case is that error.
        for (const leafQuery of query.leaves ?? []) result[leafQuery.key] = opened.error;
        result["@file"] = opened.error;
        return result;
    }
    const sm = opened.value;
    const entries = sm.getEntries();
    const byId = entryIndex(entries);
    tagMessages(entries);
    for (const leafQuery of query.leaves ?? []) {
        result[leafQuery.key] = leafResults(sm, entries, byId, leafQuery, query, scrub);
    }
    const file = {};
    const treeKey = query.tree === "flat" ? "treeFlat" : "tree";
    if (treeLoops(entries)) file[treeKey] = TREE_HANG;
    else {
        const tree = capture(() => (query.tree === "flat" ? flatTree : nestedTree)(sm.getTree()), scrub);
        file[treeKey] = tree.error ?? plain(tree.value);
    }
    file.migrate = migrate.error ?? plain(migrate.value);
    file.branch = (query.branches ?? []).map((item) => {
        const branch = capture(() => branchValue(sm, byId, item, query.budgets ?? []), scrub);
        return branch.error ?? plain(branch.value);
    });
    file.entryCount = entries.length;
    file.leafId = sm.getLeafId();
    if (IS_1X) file.sessionName = sm.getSessionName() ?? null;
    result["@file"] = file;
    return result;
}

function answer({ query, path }) {
    const dir = mkdtempSync(join(tmpdir(), "pinb-pi-answer-"));
    try {
        const copy = join(dir, basename(path) || "session.jsonl");
        copyFileSync(path, copy);
        return answerCopy(query, copy);
    } finally {
        rmSync(dir, { recursive: true, force: true });
    }
}

// ---------------------------------------------------------------------------
// open, build, call
// ---------------------------------------------------------------------------

function open(request) {
    const sm = withPositionalIds(() => SessionManager.open(request.path, request.sessionDir));
    const entries = sm.getEntries();
    const byId = entryIndex(entries);
    const hasLeaf = Object.hasOwn(request, "leaf");
    const leaf = hasLeaf ? request.leaf : sm.getLeafId();
    const start = leaf === null ? undefined : ((leaf ? byId.get(leaf) : undefined) ?? entries[entries.length - 1]);
    const out = {
        header: sm.getHeader(),
        entryCount: entries.length,
        leafId: sm.getLeafId(),
        context: walkLoops(start, byId) ? HANG : pi.buildSessionContext(entries, leaf),
        tree: treeLoops(entries) ? TREE_HANG : nestedTree(sm.getTree()),
        entries,
    };
    if (IS_1X) out.sessionName = sm.getSessionName() ?? null;
    return plain(out);
}

const STATIC_STEPS = new Set(["forkFrom", "create", "open", "inMemory", "continueRecent"]);

function resolveRefs(value, results) {
    if (Array.isArray(value)) return value.map((v) => resolveRefs(v, results));
    if (value && typeof value === "object") {
        if (Object.hasOwn(value, "$ref")) {
            const target = results[value.$ref];
            return value.field === undefined ? target : target?.[value.field];
        }
        return decodeArg(Object.fromEntries(Object.entries(value).map(([k, v]) => [k, resolveRefs(v, results)])));
    }
    return value;
}

function build(request) {
    const run = () => {
        const create = request.create ?? {};
        const mode = create.mode ?? "create";
        let sm;
        if (mode === "create") sm = SessionManager.create(request.cwd, request.dir, ...(create.options ? [create.options] : []));
        else if (mode === "open") sm = SessionManager.open(create.path, request.dir);
        else if (mode === "inMemory") sm = SessionManager.inMemory(request.cwd);
        else if (mode === "forkFrom") sm = SessionManager.forkFrom(create.path, request.cwd, request.dir);
        else if (mode === "continueRecent") sm = SessionManager.continueRecent(request.cwd, request.dir);
        else throw new Error(`unknown create mode ${mode}`);
        const results = [];
        for (const [index, step] of (request.steps ?? []).entries()) {
            try {
                const args = (step.args ?? []).map((a) => resolveRefs(a, results));
                if (STATIC_STEPS.has(step.method)) {
                    // A static constructor replaces the manager the next steps drive.
                    sm = SessionManager[step.method](...args);
                    results.push(sm.getSessionFile() ?? null);
                    continue;
                }
                const method = sm[step.method];
                if (step.method.startsWith("_") || step.method === "constructor" || typeof method !== "function") {
                    throw new Error(`SessionManager has no public method ${step.method}`);
                }
                results.push(plain(method.apply(sm, args) ?? null));
            } catch (error) {
                error.step = index;
                throw error;
            }
        }
        return plain({
            file: sm.getSessionFile() ?? null,
            sessionId: sm.getSessionId(),
            results,
            leafId: sm.getLeafId(),
            header: sm.getHeader(),
            entries: sm.getEntries(),
        });
    };
    const clocked = () => withClock(request.clock, run);
    return request.ids === "positional" ? withPositionalIds(clocked) : clocked();
}

const CALL_MODULES = [pi, compaction, compactionUtils, sessionModule, messagesModule];

function call({ fn, args = [] }) {
    const owner = CALL_MODULES.find((m) => typeof m[fn] === "function");
    if (!owner || fn === "SessionManager") throw new Error(`Pi ${VERSION} exports no function ${fn}`);
    return plain(owner[fn](...args.map(decodeArg)) ?? null);
}

// ---------------------------------------------------------------------------
// Server loop
// ---------------------------------------------------------------------------

/**
 * Time Pi's own open, context and tree on a file: medians in milliseconds, process start
 * excluded. Each open reads a fresh copy (opening a legacy file makes Pi rewrite it).
 */
function bench({ path, runs = 11 }) {
    const dir = mkdtempSync(join(tmpdir(), "pinb-pi-bench-"));
    const median = (times) => times.sort((a, b) => a - b)[Math.floor(times.length / 2)];
    try {
        const copies = [];
        for (let i = 0; i < runs; i++) {
            const copy = join(dir, `${i}-${basename(path)}`);
            copyFileSync(path, copy);
            copies.push(copy);
        }
        const open = [];
        let sm;
        for (const copy of copies) {
            const start = performance.now();
            sm = SessionManager.open(copy, dir);
            open.push(performance.now() - start);
        }
        const entries = sm.getEntries();
        const context = [];
        const tree = [];
        for (let i = 0; i < runs; i++) {
            let start = performance.now();
            pi.buildSessionContext(entries);
            context.push(performance.now() - start);
            start = performance.now();
            sm.getTree();
            tree.push(performance.now() - start);
        }
        return { open: median(open), context: median(context), tree: median(tree), entries: entries.length };
    } finally {
        rmSync(dir, { recursive: true, force: true });
    }
}

/** JSON.stringify(JSON.parse(text)): how JavaScript reads a JSON text, written canonically. */
function parse({ text }) {
    return JSON.stringify(JSON.parse(text));
}

// The collector, for timing from a settled heap (the flag is set before first use).
v8.setFlagsFromString("--expose-gc");
const collect = vm.runInNewContext("gc");

function memory() {
    const usage = process.memoryUsage();
    return { heapUsed: usage.heapUsed, rss: usage.rss };
}

/** Milliseconds of CPU this process has used (every thread: V8 collects on helpers). */
function cpuMs() {
    const { user, system } = process.cpuUsage();
    return (user + system) / 1000;
}

/**
 * One interleaved round of the open benchmark: a fresh copy, the collector run, then Pi's
 * open, the first context after it and the first tree, each timed once (milliseconds), and
 * the heap the opened session holds (bytes, measured before anything is freed).
 */
function benchRound({ path }) {
    const dir = mkdtempSync(join(tmpdir(), "pinb-pi-bench-"));
    try {
        const copy = join(dir, basename(path));
        copyFileSync(path, copy);
        collect();
        const before = memory();
        let cpu = cpuMs();
        let start = performance.now();
        const sm = SessionManager.open(copy, dir);
        const open = performance.now() - start;
        const openCpu = cpuMs() - cpu;
        const after = memory();
        cpu = cpuMs();
        start = performance.now();
        pi.buildSessionContext(sm.getEntries());
        const context = performance.now() - start;
        const contextCpu = cpuMs() - cpu;
        cpu = cpuMs();
        start = performance.now();
        sm.getTree();
        const tree = performance.now() - start;
        const treeCpu = cpuMs() - cpu;
        return {
            open, context, tree, openCpu, contextCpu, treeCpu,
            heap: after.heapUsed - before.heapUsed, rss: after.rss - before.rss,
        };
    } finally {
        rmSync(dir, { recursive: true, force: true });
    }
}

/** `SessionManager.listAll()` (what /resume lists) over an agent folder, timed once. */
async function benchList({ agentDir, rows = false }) {
    const saved = process.env.PI_CODING_AGENT_DIR;
    process.env.PI_CODING_AGENT_DIR = agentDir;
    try {
        collect();
        const before = memory();
        const cpu = cpuMs();
        const start = performance.now();
        const sessions = await SessionManager.listAll();
        const ms = performance.now() - start;
        const msCpu = cpuMs() - cpu;
        const after = memory();
        const result = {
            ms, msCpu, count: sessions.length,
            heap: after.heapUsed - before.heapUsed, rss: after.rss - before.rss,
        };
        if (rows) {
            result.rows = sessions.map((s) => ({
                path: s.path, id: s.id, cwd: s.cwd, name: s.name ?? null,
                parentSessionPath: s.parentSessionPath ?? null,
                created: Number.isNaN(s.created.getTime()) ? null : s.created.getTime(),
                modified: s.modified.getTime(), messageCount: s.messageCount,
                firstMessage: s.firstMessage, allMessagesText: s.allMessagesText,
            }));
        }
        return result;
    } finally {
        if (saved === undefined) delete process.env.PI_CODING_AGENT_DIR;
        else process.env.PI_CODING_AGENT_DIR = saved;
    }
}

const OPS = {
    ping: () => ({ pi: VERSION, node: process.version }),
    // Date.parse of each text (null for NaN): what Pi's tree sorts children by.
    dateParse: ({ texts }) =>
        texts.map((text) => {
            const ms = Date.parse(text);
            return Number.isNaN(ms) ? null : ms;
        }),
    parse,
    bench,
    benchRound,
    benchList,
    answer,
    open,
    build,
    call,
};

function respond(message) {
    writeOut(`${JSON.stringify(message)}\n`);
}

respond({ ready: { pi: VERSION, node: process.version, importMs } });

const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
for await (const line of lines) {
    if (!line.trim()) continue;
    let request;
    try {
        request = JSON.parse(line);
    } catch (error) {
        respond({ id: null, error: errorText(error) });
        continue;
    }
    try {
        const op = OPS[request.op];
        if (!op) throw new Error(`unknown op ${request.op}`);
        const result = await op(request);
        // "encoded": the result as JSON.stringify's text, for values nested deeper than
        // the reader's JSON parser goes (the answer is then one flat string).
        respond({ id: request.id, result: request.encoded ? JSON.stringify(result) : result });
    } catch (error) {
        const response = { id: request.id, error: errorText(error) };
        if (typeof error?.step === "number") response.step = error.step;
        respond(response);
    }
}
