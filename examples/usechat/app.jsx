// A minimal chat page on the Vercel AI SDK's `useChat` (@ai-sdk/react), talking to a
// streamcite UI message stream endpoint (`streamcite relay`'s or the FastAPI example's
// POST /api/chat). It shows what a team gets with no streamcite client code: the answer,
// its footnotes as links into a sources list built from the source parts, and the
// grounding score from the data part. React renders every string as text.
import { useChat } from "@ai-sdk/react";
import { DefaultChatTransport } from "ai";
import { useEffect, useState } from "react";
import { createRoot } from "react-dom/client";

const params = new URLSearchParams(location.search);
const transport = new DefaultChatTransport({ api: params.get("api") || "/api/chat" });

function safeHref(url) {
  try {
    const u = new URL(url);
    return u.protocol === "http:" || u.protocol === "https:" ? u.href : null;
  } catch {
    return null;
  }
}

// "[1]" and "[1, 2]" in the text become superscript links to the sources list
function Answer({ id, text }) {
  const out = [];
  const re = /\[(\d{1,4}(?:, *\d{1,4})*)\]/g;
  let last = 0;
  let m;
  while ((m = re.exec(text))) {
    if (m.index > last) out.push(text.slice(last, m.index));
    const nums = m[1].split(",").map((n) => n.trim());
    out.push(
      <sup className="fn" key={m.index} data-marker={m[0]}>
        {nums.map((n, i) => (
          <a key={n} href={`#src-${id}-${n}`} data-footnote={n}>
            {i ? "," : ""}
            {n}
          </a>
        ))}
      </sup>,
    );
    last = m.index + m[0].length;
  }
  if (last < text.length) out.push(text.slice(last));
  return <div className="answer">{out}</div>;
}

function Sources({ id, parts }) {
  const sources = parts.filter((p) => p.type === "source-url" || p.type === "source-document");
  if (!sources.length) return null;
  return (
    <ol className="sources">
      {sources.map((p) => {
        const meta = (p.providerMetadata && p.providerMetadata.streamcite) || {};
        const n = Number.isInteger(meta.document_index) ? meta.document_index + 1 : null;
        const href = p.type === "source-url" ? safeHref(p.url) : null;
        const title = p.title || (p.type === "source-url" ? p.url : "Document");
        return (
          <li key={p.sourceId} id={n && /^cite-\d+$/.test(p.sourceId) ? `src-${id}-${n}` : undefined}
              data-source-id={p.sourceId} value={n || undefined}>
            {href ? <a className="title" href={href} rel="noopener noreferrer">{title}</a> : <span className="title">{title}</span>}
            {meta.cited_text ? <blockquote className="cited">{meta.cited_text}</blockquote> : null}
          </li>
        );
      })}
    </ol>
  );
}

function Message({ message }) {
  const text = message.parts.filter((p) => p.type === "text").map((p) => p.text).join("");
  if (message.role === "user") return <div className="msg user">{text}</div>;
  const grounding = message.parts.find((p) => p.type === "data-grounding");
  const score = grounding && grounding.data && grounding.data.support_score;
  return (
    <div className="msg assistant" data-id={message.id}>
      {typeof score === "number" ? <div className="support">support {Math.round(score * 100)}%</div> : null}
      <Answer id={message.id} text={text} />
      <Sources id={message.id} parts={message.parts} />
    </div>
  );
}

function Chat() {
  const { messages, sendMessage, status, stop, error } = useChat({ transport });
  const [input, setInput] = useState("");
  useEffect(() => {
    window.usechat = { status, messages, error: error ? String(error) : null };
  }, [status, messages, error]);
  return (
    <main>
      <p id="status" data-status={status}>{status}</p>
      {messages.map((m) => <Message key={m.id} message={m} />)}
      {error ? <p className="error" role="alert">{String(error.message || error)}</p> : null}
      <form onSubmit={(e) => { e.preventDefault(); if (input.trim()) { sendMessage({ text: input }); setInput(""); } }}>
        <input id="question" value={input} onChange={(e) => setInput(e.target.value)} placeholder="Ask a question" />
        <button id="send" type="submit" disabled={status !== "ready" && status !== "error"}>Ask</button>
        <button id="stop" type="button" onClick={() => stop()} disabled={status !== "streaming" && status !== "submitted"}>Stop</button>
      </form>
    </main>
  );
}

window.usechat = { status: "loading", messages: [], error: null };
createRoot(document.getElementById("root")).render(<Chat />);
