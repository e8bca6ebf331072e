"""An OpenAI-shaped server that fails in one chosen way, for tests/remote.rs: the failures a
real server shows only by accident (a stream cut short, malformed events, a 503 while it loads,
a refused key, silence), and a llama-server built without llguidance (`no-llguidance`: its
/props, /apply-template, /tokenize and /completion, refusing a `%llguidance` grammar as
llama-server does; GET /grammars lists the grammars each /completion was sent). Standard
library only.

    python3 fault_server.py MODE   -> prints the port, then serves until killed

MODE: cut | malformed | busy-then-ok | unauthorized | silent | error-event | no-llguidance |
      tools-no-done (a tool call, its finish reason, then the body ends without [DONE])
"""
import json
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MODE = sys.argv[1]
CALLS = {"chat": 0}
GRAMMARS = []


def chunk(text, finish=None):
    return {"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": finish}]}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def send_json(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path == "/props" and MODE == "no-llguidance":
            self.send_json(200, {"default_generation_settings": {"n_ctx": 4096}})
        elif self.path == "/grammars":
            self.send_json(200, GRAMMARS)
        elif self.path == "/v1/models":
            self.send_json(200, {"object": "list", "data": [{"id": "fault-model", "object": "model"}]})
        else:
            self.send_json(404, {"error": {"message": "not found"}})

    def do_POST(self):
        length = int(self.headers.get("Content-Length", 0))
        body = json.loads(self.rfile.read(length) or b"{}")
        if MODE == "no-llguidance":
            return self.llama_server(body)
        CALLS["chat"] += 1
        if MODE == "unauthorized":
            return self.send_json(401, {"error": {"message": "Invalid API key", "type": "auth"}})
        if MODE == "busy-then-ok" and CALLS["chat"] == 1:
            return self.send_json(503, {"error": {"message": "Loading model"}})
        if MODE == "silent":
            time.sleep(30)
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()

        def event(obj):
            payload = obj if isinstance(obj, str) else json.dumps(obj)
            self.wfile.write(f"data: {payload}\n\n".encode())
            self.wfile.flush()

        if MODE == "tools-no-done":
            call = {"index": 0, "id": "call_1", "type": "function",
                    "function": {"name": "get_weather", "arguments": json.dumps({"city": "Paris"})}}
            event({"choices": [{"index": 0, "delta": {"tool_calls": [call]}, "finish_reason": None}]})
            event({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})
            self.close_connection = True
            return
        event(chunk("Hello"))
        if MODE == "cut":
            self.close_connection = True
            return
        if MODE == "malformed":
            event("{not json")
            return
        if MODE == "error-event":
            event({"error": {"message": "out of memory on the GPU"}})
            return
        event(chunk(" world", "stop"))
        event({"choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 2}})
        event("[DONE]")


    def llama_server(self, body):
        if self.path == "/apply-template":
            return self.send_json(200, {"prompt": "".join(m["content"] for m in body["messages"])})
        if self.path == "/tokenize":
            # A token a byte: enough for ids that continue a prompt.
            return self.send_json(200, {"tokens": list(body["content"].encode())})
        if self.path != "/completion":
            return self.send_json(404, {"error": {"message": "not found"}})
        grammar = body.get("grammar")
        GRAMMARS.append(grammar)
        if grammar and grammar.startswith("%llguidance"):
            # llama-server's own answer (tools/server/server-context.cpp, common/sampling.cpp).
            return self.send_json(400, {"error": {"code": 400, "type": "invalid_request_error",
                "message": "Failed to initialize samplers: failed to parse grammar: llguidance is not enabled"}})
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        for piece, ids, stop in [('{"a"', [1, 2], False), (": 1}", [3, 4], False), ("", [0], True)]:
            event = {"content": piece, "tokens": ids, "stop": stop}
            if stop:
                event.update(stop_type="eos", tokens_predicted=5, tokens_evaluated=len(body["prompt"]))
            self.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
            self.wfile.flush()


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
