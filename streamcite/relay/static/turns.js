// Turns and streams on the page: a turn is a question and its answer's elements (from
// the page's template); a stream is what the relay sends for it. Also the status line,
// the error boxes, the banner and the connection indicator.

import { el } from "./dom.js";
import { newParts } from "./kinds.js";
import { setLang } from "./lang.js";
import { newProviderTools } from "./ptools.js";
import { $, state } from "./state.js";

export function setConn(stateName, text) {
  const node = $("#conn");
  node.dataset.state = stateName;
  node.textContent = text;
}

export function newTurn(question) {
  const node = $("#turn-template").content.firstElementChild.cloneNode(true);
  $(".question", node).textContent = question;
  // Each message takes its direction from its own text: Hebrew reads right to left.
  $(".question", node).dir = "auto";
  setLang($(".question", node), question);
  const empty = $("#empty");
  if (empty) empty.remove();
  $("#conversation").appendChild(node);
  node.scrollIntoView({ block: "end" });
  return {
    node,
    text: $(".text", node),
    status: $(".status", node),
    support: $(".support", node),
    usage: $(".usage", node),
    errors: $(".stream-errors", node),
    sources: $(".sources", node),
    citations: $(".citations", node),
    wikit: $(".wikit", node),
    wikitList: $(".wikit-list", node),
    reasoning: $(".reasoning", node),
    reasoningLabel: $(".reasoning-label", node),
    reasoningText: $(".reasoning-text", node),
    refusal: $(".refusal", node),
    refusalText: $(".refusal-text", node),
    tools: $(".tool-calls", node),
    ptools: $(".provider-tools", node),
  };
}

export function newStream(id, turn) {
  const s = {
    id,
    turn,
    text: "",
    lastSeq: 0,
    seqs: [],
    refs: [], // {number, offset} (offset in code points)
    citations: [],
    spans: [], // where citations anchor in the text (answers without [n] markers)
    sources: [],
    grounding: null,
    claims: [], // claim events, as they arrive (live checks, then cloud checkers')
    done: false,
    lost: false,
    verified: null,
    allowGap: false,
    renderQueued: false,
    tail: null, // text node that receives tokens between full renders
    lang: null, // the answer's stated language (done.answer.language), when there is one
    parts: newParts(), // reasoning, tool calls, refusal (kinds.js)
    ptools: newProviderTools(), // tools the provider ran (ptools.js)
  };
  turn.node.dataset.streamId = id;
  state.streams.set(id, s);
  return s;
}

export function setTurnStatus(turn, name, text) {
  turn.status.dataset.state = name;
  turn.status.textContent = text;
}

export function setStatus(s, name, text) {
  setTurnStatus(s.turn, name, text);
}

export function addTurnError(turn, err) {
  const box = el("div", "stream-error");
  box.appendChild(el("strong", null, String(err.code || "error")));
  box.appendChild(document.createTextNode(": " + String(err.message || "")));
  if (err.retryable) box.appendChild(el("span", "retryable", " (retryable)"));
  turn.errors.appendChild(box);
}

export function addStreamError(s, err) {
  addTurnError(s.turn, err);
}

export function updateStop() {
  const s = state.current;
  $("#stop").disabled = !(s && !s.done && !s.lost);
}

// -- banner -------------------------------------------------------------------------

export function showBanner(text, kind = "error") {
  const b = $("#banner");
  b.textContent = text;
  b.dataset.kind = kind;
  b.hidden = false;
}

export function hideBanner() {
  $("#banner").hidden = true;
}
