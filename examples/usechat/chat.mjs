// Drive a streamcite UI message stream endpoint with the AI SDK's own client:
// DefaultChatTransport sends the request, readUIMessageStream builds the UIMessage.
// Usage: node chat.mjs URL QUESTION [abort]  -> prints {"message": UIMessage, "errors": [...]}
import { DefaultChatTransport, readUIMessageStream } from 'ai';

const [url, question, mode] = process.argv.slice(2);
const controller = new AbortController();
const transport = new DefaultChatTransport({ api: url });
const errors = [];
const stream = await transport.sendMessages({
  chatId: 'c1',
  trigger: 'submit-message',
  messageId: undefined,
  messages: [{ id: 'u1', role: 'user', parts: [{ type: 'text', text: question }] }],
  abortSignal: controller.signal,
});
let message;
try {
  for await (const m of readUIMessageStream({ stream, onError: e => errors.push(String(e)) })) {
    message = m;
    // abort: stop as soon as the first text arrived (the browser's stop button)
    if (mode === 'abort' && m.parts.some(p => p.type === 'text' && p.text)) controller.abort();
  }
} catch (e) {
  if (mode !== 'abort') throw e;
  errors.push('aborted');
}
console.log(JSON.stringify({ message, errors }));
