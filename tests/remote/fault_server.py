"""An OpenAI-shaped server that fails in one chosen way, for tests/remote.rs: the failures a
real server shows only by accident (a stream cut short, malformed events, a 503 while it loads,
a refused key, silence). Standard library only.

    python3 fault_server.py MODE   -> prints the port, then serves until killed

MODE: cut | malformed | busy-then-ok | unauthorized | silent | error-event
"""
import json
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MODE = sys.argv[1]
CALLS = {"chat": 0}


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
        if self.path == "/v1/models":
            self.send_json(200, {"object": "list", "data": [{"id": "fault-model", "object": "model"}]})
        else:
            self.send_json(404, {"error": {"message": "not found"}})

    def do_POST(self):
        length = int(self.headers.get("Content-Length", 0))
        self.rfile.read(length)
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


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
