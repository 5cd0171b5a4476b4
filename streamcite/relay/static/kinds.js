// The answer's other parts: reasoning (a collapsible block above the answer), tool
// calls (one card each, built up fragment by fragment) and refusals (styled as such).
// All of it is upstream text: it goes in with textContent / appendData only.

import { el, placeByIndex, toolHead } from "./dom.js";
import { setLang } from "./lang.js";

const PRETTY_MAX = 256 * 1024; // arguments longer than this are shown as received

/** Per-stream state for these parts (kept on the stream object). */
export function newParts() {
  return { reasoning: "", reasoningSettled: false, tools: new Map(), refusal: null };
}

// -- reasoning ------------------------------------------------------------------------

/** A reasoning delta: shown, open, while the model thinks. */
export function onReasoning(s, text) {
  const p = s.parts;
  const box = s.turn.reasoning;
  if (!p.reasoning) {
    box.hidden = false;
    box.open = true; // open while it streams; collapsed once the answer starts
    box.dataset.state = "streaming";
    s.turn.reasoningLabel.textContent = "Reasoning…";
  }
  p.reasoning += text;
  s.turn.reasoningText.appendChild(document.createTextNode(text));
  if (p.reasoning.length < 400 || !s.turn.reasoningText.hasAttribute("lang")) {
    setLang(s.turn.reasoningText, p.reasoning);
  }
}

/** The answer (or a refusal, a tool call, the end) started: fold the reasoning away once. */
export function settleReasoning(s) {
  const p = s.parts;
  if (p.reasoningSettled || !p.reasoning) return;
  p.reasoningSettled = true;
  const box = s.turn.reasoning;
  box.open = false; // the reader can open it again: it is a <details>
  box.dataset.state = "done";
  const words = p.reasoning.trim().split(/\s+/).filter(Boolean).length;
  s.turn.reasoningLabel.textContent = `Reasoning (${words} word${words === 1 ? "" : "s"})`;
}

// -- tool calls -----------------------------------------------------------------------

function toolCard(s, index) {
  const tools = s.parts.tools;
  let t = tools.get(index);
  if (t) return t;
  const card = el("article", "tool-call");
  card.dataset.toolIndex = String(index);
  card.dataset.json = "partial";
  const { head, name, id } = toolHead("tool call");
  card.appendChild(head);
  const args = el("pre", "tool-args");
  const raw = document.createTextNode("");
  args.appendChild(raw);
  card.appendChild(args);
  const note = el("p", "tool-note");
  note.hidden = true;
  card.appendChild(note);
  placeByIndex(s.turn.tools, tools, index, card, null);
  t = { id: null, name: null, args: "", card, nameNode: name, idNode: id, argsNode: args, raw, note };
  tools.set(index, t);
  return t;
}

/** A `tool_call` event: name and id once known, argument fragments appended as they come. */
export function onToolCall(s, ev) {
  const index = Number.isInteger(ev.tool_index) ? ev.tool_index : 0;
  const t = toolCard(s, index);
  if (typeof ev.name === "string" && ev.name) {
    t.name = ev.name;
    t.nameNode.textContent = ev.name;
  }
  if (typeof ev.id === "string" && ev.id) {
    t.id = ev.id;
    t.idNode.textContent = ev.id;
  }
  if (typeof ev.arguments === "string" && ev.arguments) {
    t.args += ev.arguments;
    if (t.card.dataset.json !== "partial") {
      // pretty-printed already, and more came: back to the text as received
      t.argsNode.replaceChildren(t.raw);
      t.card.dataset.json = "partial";
    }
    t.raw.appendData(ev.arguments);
    // a fragment that may close the JSON: show it pretty as soon as it parses
    if (/[}\]]\s*$/.test(ev.arguments)) prettyPrint(t, false);
  }
}

function prettyPrint(t, final) {
  let value;
  let ok = false;
  if (t.args.length <= PRETTY_MAX) {
    try {
      value = JSON.parse(t.args);
      ok = true;
    } catch {
      ok = false;
    }
  }
  if (ok) {
    t.argsNode.textContent = JSON.stringify(value, null, 2);
    t.card.dataset.json = "valid";
    t.note.hidden = true;
  } else if (final) {
    t.card.dataset.json = t.args ? "invalid" : "empty";
    t.note.hidden = false;
    t.note.textContent = t.args
      ? "the arguments are not valid JSON: shown as received"
      : "no arguments";
  }
}

/** The choice finished (or the stream is done): each card shows its final arguments. */
export function settleToolCalls(s, final) {
  // The cards were built from the events; the final list (done.answer.tool_calls) only
  // fills in when no event carried them.
  if (!s.parts.tools.size && Array.isArray(final)) {
    final.forEach((tc, index) => {
      if (tc && typeof tc === "object") {
        onToolCall(s, { tool_index: index, id: tc.id, name: tc.name, arguments: tc.arguments });
      }
    });
  }
  for (const t of s.parts.tools.values()) if (t.card.dataset.json === "partial") prettyPrint(t, true);
}

// -- refusal --------------------------------------------------------------------------

/** A refusal delta: the model declined; shown apart from an answer. */
export function onRefusal(s, text) {
  const p = s.parts;
  if (p.refusal === null) {
    p.refusal = "";
    s.turn.refusal.hidden = false;
  }
  p.refusal += text;
  s.turn.refusalText.appendChild(document.createTextNode(text));
  if (p.refusal.length < 400) setLang(s.turn.refusalText, p.refusal);
}

// -- enrichment skipped -----------------------------------------------------------------

const SKIPPED = {
  refusal: ["not checked: the model declined", "a refusal is not checked against sources"],
  incomplete: ["not checked: the answer is incomplete", "the answer was cut, so it was not checked"],
};

/** `done.answer.enrichment_skipped`: say why there is no grounding, neutrally (not a failure). */
export function showSkipped(s, why) {
  if (typeof why !== "string" || !why) return;
  const [text, title] = SKIPPED[why] || [`not checked: ${why}`, "the post-stream checks did not run"];
  const node = s.turn.support;
  node.hidden = false;
  node.textContent = text;
  node.title = title;
  node.dataset.level = "neutral";
  node.dataset.skipped = why;
  s.turn.sources.dataset.skipped = why;
}

/** What the tests and debugging see of these parts. */
export function partsView(s) {
  const p = s.parts;
  return {
    reasoning: p.reasoning,
    refusal: p.refusal,
    toolCalls: [...p.tools.entries()]
      .sort((a, b) => a[0] - b[0])
      .map(([, t]) => ({ id: t.id, name: t.name, arguments: t.args })),
  };
}
