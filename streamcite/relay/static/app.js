// streamcite relay page: one WebSocket, many streams, exactly-once rendering.
//
// Everything that comes from the network is rendered as text (textContent,
// createElement, setAttribute with plain strings) — never innerHTML — and only
// http:/https: URLs become links. The relay's Content-Security-Policy is a second
// wall, not the first.
//
// The page's modules, by concern:
//   state.js       shared state, send()
//   connection.js  the protocol: WebSocket, reconnect and resume, control frames
//   events.js      stream events, in order and exactly once
//   turns.js       a question's turn on the page, status, errors, banner
//   render.js      the answer text, rebuilt once per frame
//   footnotes.js   where footnotes go: [n] markers and citation spans
//   claims.js      claim tints and the support score
//   sources.js     the Sources and Retrieved passages panels
//   kinds.js       reasoning, tool calls, refusals
//   ptools.js      tools the provider runs (web search, code execution, MCP)
//   offsets.js     code points and UTF-16; lang.js, dom.js: small helpers

import { connect } from "./connection.js";
import { partsView } from "./kinds.js";
import { providerToolsView } from "./ptools.js";
import { $, send, state } from "./state.js";
import { addTurnError, newTurn, setTurnStatus } from "./turns.js";

export { safeHref } from "./sources.js";

// -- the form -----------------------------------------------------------------------

function ask(question) {
  const ref = `q${state.nextRef++}`;
  const turn = newTurn(question);
  if (!send({ type: "ask", question, ref })) {
    addTurnError(turn, { code: "not_connected", message: "not connected to the relay; try again in a moment" });
    setTurnStatus(turn, "error", "not sent");
    return false;
  }
  state.pending.set(ref, turn);
  return true;
}

$("#ask").addEventListener("submit", (ev) => {
  ev.preventDefault();
  const input = $("#question");
  const question = input.value.trim();
  if (!question) return;
  if (ask(question)) input.value = ""; // a question that was not sent stays to be sent again
});

$("#question").addEventListener("keydown", (ev) => {
  if (ev.key === "Enter" && !ev.shiftKey) {
    ev.preventDefault();
    $("#ask").requestSubmit();
  }
});

$("#stop").addEventListener("click", () => {
  const s = state.current;
  if (s && !s.done) send({ type: "cancel", stream_id: s.id });
});

// Read-only view for tests and debugging, plus a way to simulate a network cut.
window.streamcite = {
  streams: () =>
    [...state.streams.values()].map((s) => ({
      id: s.id,
      text: s.text,
      seqs: s.seqs.slice(),
      done: s.done,
      verified: s.verified,
      claims: s.claims.length,
      spans: s.spans.length,
      ...partsView(s),
      providerTools: providerToolsView(s),
    })),
  connected: () => state.connected,
  dropConnection: () => state.ws && state.ws.close(4000, "dropped by the page"),
};

connect();
