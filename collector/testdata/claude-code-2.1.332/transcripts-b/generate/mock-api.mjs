// A local stand-in for the Messages API: first a Bash tool_use, then (once a tool_result arrives) a short text.
import { createServer } from 'node:http';
let n = 0;
const server = createServer((req, res) => {
  let body = '';
  req.on('data', (c) => (body += c));
  req.on('end', () => {
    if (req.url.startsWith('/v1/messages/count_tokens')) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"input_tokens":10}');
      return;
    }
    if (!req.url.startsWith('/v1/messages')) { res.writeHead(404); res.end('{}'); return; }
    let parsed = {};
    try {
      parsed = JSON.parse(body);
    } catch {
      // Not JSON: answered as a first request.
    }
    const hasResult = JSON.stringify(parsed.messages ?? []).includes('"tool_result"');
    n++;
    const id = `msg_gen${n}`;
    const usage = { input_tokens: 10, output_tokens: 5 };
    const model = parsed.model ?? 'claude-opus-5-5';
    const blocks = hasResult
      ? [{ type: 'text', text: 'Done.' }]
      : [{ type: 'tool_use', id: `toolu_gen${n}`, name: 'Bash', input: { command: 'echo hi', description: 'Print hi' } }];
    const stop = hasResult ? 'end_turn' : 'tool_use';
    if (!parsed.stream) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ id, type: 'message', role: 'assistant', model, content: blocks, stop_reason: stop, stop_sequence: null, usage }));
      return;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    const send = (event, data) => res.write(`event: ${event}\ndata: ${JSON.stringify({ type: event, ...data })}\n\n`);
    send('message_start', { message: { id, type: 'message', role: 'assistant', model, content: [], stop_reason: null, stop_sequence: null, usage } });
    blocks.forEach((b, index) => {
      if (b.type === 'text') {
        send('content_block_start', { index, content_block: { type: 'text', text: '' } });
        send('content_block_delta', { index, delta: { type: 'text_delta', text: b.text } });
      } else {
        send('content_block_start', { index, content_block: { type: 'tool_use', id: b.id, name: b.name, input: {} } });
        send('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: JSON.stringify(b.input) } });
      }
      send('content_block_stop', { index });
    });
    send('message_delta', { delta: { stop_reason: stop, stop_sequence: null }, usage: { output_tokens: 5 } });
    send('message_stop', {});
    res.end();
  });
});
server.listen(Number(process.env.PORT ?? 8787), '127.0.0.1', () => console.log('mock api on', server.address().port));
