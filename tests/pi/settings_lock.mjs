#!/usr/bin/env node
/**
 * Pi 1.6.0's own lock and settings writer, for tests of what pinb writes beside them.
 *
 *   <node 22> settings_lock.mjs ROOT hold FILE MS [STALE_MS]
 *       proper-lockfile's lockSync(FILE, {realpath: false}) as Pi's settings writer takes
 *       it (STALE_MS: proper-lockfile's `stale`, default its 10 s); prints
 *       {"held": <ms>}, holds for MS, prints {"releasing": <ms>} and releases. A lock it
 *       cannot take prints {"error": CODE} and exits 3.
 *   <node 22> settings_lock.mjs ROOT theme AGENT_DIR THEME...
 *       Pi's SettingsManager (on AGENT_DIR) saves each theme in turn, as `/settings`
 *       does; prints {"errors": [<message per failed write>]}.
 *   <node 22> settings_lock.mjs ROOT compaction AGENT_DIR PROVIDER/MODEL...
 *       What Pi's SettingsManager resolves as the compaction settings of each model:
 *       {"PROVIDER/MODEL": {"reserveTokens": .., "keepRecentTokens": ..}, "errors": [..]}.
 *
 * ROOT is the folder `tests/pi/reference.py` installs the Pi packages into.
 */
import module from "node:module";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [root, op, ...args] = process.argv.slice(2);
const modules = join(root, "node_modules");
const require = module.createRequire(join(modules, "noop.js"));
const say = (value) => process.stdout.write(`${JSON.stringify(value)}\n`);

async function settingsManager(agentDir) {
    const file = join(modules, "@earendil-works/pi-coding-agent/dist/core/settings-manager.js");
    const { SettingsManager } = await import(pathToFileURL(file).href);
    return SettingsManager.create(agentDir, agentDir);
}

const messages = (errors) => errors.map(({ error }) => `${error.code ?? ""} ${error.message}`);

if (op === "hold") {
    const [file, ms, staleMs] = args;
    const lockfile = require("proper-lockfile");
    const options = { realpath: false };
    if (staleMs) options.stale = Number(staleMs);
    let release;
    try {
        release = lockfile.lockSync(file, options);
    } catch (error) {
        say({ error: error.code ?? error.message });
        process.exit(3);
    }
    say({ held: Date.now() });
    setTimeout(() => {
        say({ releasing: Date.now() }); // before: nothing else can have the lock until then
        release();
    }, Number(ms));
} else if (op === "theme") {
    const [agentDir, ...themes] = args;
    const manager = await settingsManager(agentDir);
    for (const theme of themes) {
        manager.setTheme(theme);
        await manager.flush();
    }
    say({ errors: messages(manager.drainErrors()) });
} else if (op === "compaction") {
    const [agentDir, ...specs] = args;
    const manager = await settingsManager(agentDir);
    const out = {};
    for (const spec of specs) {
        const [provider, ...id] = spec.split("/");
        const settings = manager.getCompactionSettings({ provider, id: id.join("/") });
        out[spec] = {
            reserveTokens: settings.reserveTokens,
            keepRecentTokens: settings.keepRecentTokens,
        };
    }
    out.errors = messages(manager.drainErrors());
    say(out);
} else {
    process.stderr.write(`unknown op ${op}\n`);
    process.exit(2);
}
