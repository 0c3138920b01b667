// JSON-RPC 2.0 over nav-web's WebSocket relay: one message per frame. Calls are answered by id;
// requests navd sends the page (precondition.evaluate, precondition.recover) and notifications
// go to the handlers the page gives.

export function describe(e) {
  if (e && e.message) return (e.data && e.data.kind ? e.data.kind + ': ' : '') + e.message;
  return String(e);
}

export class Connection {
  // handlers: {open(), close(), notification(method, params), request(message), error(error)}
  constructor(url, handlers) {
    this.handlers = handlers;
    this.nextId = 1;
    this.waiting = new Map();
    this.ws = new WebSocket(url);
    this.ws.onopen = () => handlers.open();
    this.ws.onmessage = (e) => this.receive(JSON.parse(e.data));
    this.ws.onclose = () => handlers.close();
  }

  call(method, params = {}) {
    return new Promise((resolve, reject) => {
      const id = this.nextId++;
      this.waiting.set(id, { resolve, reject });
      this.ws.send(JSON.stringify({ jsonrpc: '2.0', id, method, params }));
    });
  }

  // Answers a request navd sent the page.
  respond(id, result) { this.ws.send(JSON.stringify({ jsonrpc: '2.0', id, result })); }
  respondError(id, error) { this.ws.send(JSON.stringify({ jsonrpc: '2.0', id, error })); }

  receive(m) {
    const hasId = m.id !== undefined && m.id !== null;
    if (hasId && this.waiting.has(m.id)) {
      const w = this.waiting.get(m.id);
      this.waiting.delete(m.id);
      if (m.error) w.reject(m.error); else w.resolve(m.result);
      return;
    }
    if (m.error) { this.handlers.error(m.error); return; }
    if (m.method && hasId) { this.handlers.request(m); return; }
    if (m.method) this.handlers.notification(m.method, m.params || {});
  }
}
