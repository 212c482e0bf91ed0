// The compaction view with its give-back button: the kernel sends the view's HTML (every
// session text escaped there) and the button's state; a click asks the kernel to give back.

function render({ model, el }) {
  const root = document.createElement("div");
  root.className = "pinb-cw";
  const bar = document.createElement("div");
  bar.className = "pinb-cw-bar";
  bar.style.cssText = "display:flex;gap:0.8em;align-items:center;margin:0.3em 0";
  const button = document.createElement("button");
  button.className = "pinb-cw-give-back";
  button.textContent = "Give back what it lost";
  const status = document.createElement("span");
  status.className = "pinb-cw-status";
  bar.append(button, status);
  const body = document.createElement("div");
  body.className = "pinb-cw-body";
  root.append(bar, body);

  const draw = () => {
    body.innerHTML = model.get("html");
    button.disabled = !model.get("can_give_back");
    button.title = model.get("reason");
    const tone = model.get("status_tone");
    status.textContent = model.get("status");
    status.dataset.tone = tone;
    status.style.color = tone === "error" ? "#b42318" : "#1a7f37";
    root.dataset.revision = String(model.get("revision"));
  };
  const onClick = () => {
    button.disabled = true; // one click at a time: the kernel's answer enables it again
    model.send({ action: "uncompact" });
  };
  button.addEventListener("click", onClick);
  const events = ["change:html", "change:status", "change:can_give_back", "change:revision"];
  for (const event of events) model.on(event, draw);
  draw();
  el.appendChild(root);
  return () => {
    for (const event of events) model.off(event, draw);
    button.removeEventListener("click", onClick);
  };
}

export default { render };
