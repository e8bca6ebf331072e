"""Drives `burrow serve` with the official OpenAI Python client (PyPI `openai`), as a user's
program would, and prints what it saw as one JSON object for tests/serve.rs to check.

Usage: client.py BASE_URL EMBEDDING_MODEL_ID
"""

import json
import sys
import threading
import time

import openai

base, embed_id = sys.argv[1], sys.argv[2]
client = openai.OpenAI(base_url=base, api_key="unused", max_retries=0, timeout=120)
report = {}

report["models"] = [m.id for m in client.models.list().data]
model = report["models"][0]
ask = [{"role": "user", "content": "Name three colours."}]

# The same greedy request, whole and streamed.
whole = client.chat.completions.create(model=model, messages=ask, temperature=0, max_tokens=24)
report["whole"] = {
    "text": whole.choices[0].message.content,
    "finish": whole.choices[0].finish_reason,
    "usage": whole.usage.model_dump(),
}
parts, finish, usage = [], None, None
for chunk in client.chat.completions.create(
    model=model, messages=ask, temperature=0, max_tokens=24, stream=True,
    stream_options={"include_usage": True},
):
    if chunk.usage is not None:
        usage = chunk.usage.model_dump()
    for c in chunk.choices:
        if c.delta.content:
            parts.append(c.delta.content)
        if c.finish_reason:
            finish = c.finish_reason
report["streamed"] = {"text": "".join(parts), "finish": finish, "usage": usage}

# A tool call round trip.
tools = [{"type": "function", "function": {
    "name": "get_weather", "description": "The current weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                   "required": ["city"]}}}]
ask_weather = [{"role": "user", "content": "What is the weather in Paris?"}]
first = client.chat.completions.create(
    model=model, messages=ask_weather, tools=tools, tool_choice="required", temperature=0,
    max_tokens=64)
msg = first.choices[0].message
calls = msg.tool_calls or []
report["tool_call"] = {
    "finish": first.choices[0].finish_reason,
    "calls": [{"id": c.id, "name": c.function.name, "arguments": json.loads(c.function.arguments)}
              for c in calls],
}
history = ask_weather + [msg.model_dump(exclude_none=True)] + [
    {"role": "tool", "tool_call_id": c.id, "content": "18 degrees and sunny"} for c in calls]
second = client.chat.completions.create(
    model=model, messages=history, tools=tools, tool_choice="none", temperature=0, max_tokens=40)
report["tool_answer"] = {
    "finish": second.choices[0].finish_reason,
    "text": second.choices[0].message.content,
    "calls": second.choices[0].message.tool_calls,
}
# Streamed calls, accumulated as clients do.
streamed_calls = {}
stream_finish = None
for chunk in client.chat.completions.create(
    model=model, messages=ask_weather, tools=tools, tool_choice="required", temperature=0,
    max_tokens=64, stream=True,
):
    for c in chunk.choices:
        for d in c.delta.tool_calls or []:
            call = streamed_calls.setdefault(d.index, {"name": "", "arguments": ""})
            if d.function.name:
                call["name"] += d.function.name
            if d.function.arguments:
                call["arguments"] += d.function.arguments
        if c.finish_reason:
            stream_finish = c.finish_reason
report["tool_call_streamed"] = {
    "finish": stream_finish,
    "calls": [{"name": c["name"], "arguments": json.loads(c["arguments"])}
              for c in streamed_calls.values()],
}

# A JSON-schema response.
schema = {"type": "object", "properties": {"city": {"type": "string"},
                                            "population": {"type": "integer"}},
          "required": ["city", "population"], "additionalProperties": False}
js = client.chat.completions.create(
    model=model, temperature=0, max_tokens=60,
    messages=[{"role": "user", "content": "Give the largest city of France and its population."}],
    response_format={"type": "json_schema", "json_schema": {"name": "city", "schema": schema,
                                                             "strict": True}})
report["json_schema"] = json.loads(js.choices[0].message.content)

# A text completion.
tc = client.completions.create(model=model, prompt="The capital of France is", max_tokens=8,
                               temperature=0)
report["completion"] = {"text": tc.choices[0].text, "finish": tc.choices[0].finish_reason}

# The prefix a request shares with the one before is not evaluated again.
system = {"role": "system", "content": "You are a helpful assistant who answers about cities. " * 8}
for q in ["Where is Lyon?", "Where is Nice?"]:
    r = client.chat.completions.create(model=model, temperature=0, max_tokens=4,
                                       messages=[system, {"role": "user", "content": q}])
    report.setdefault("cached", []).append(r.usage.prompt_tokens_details.cached_tokens)

# Embeddings, as the client asks for them by default (base64) and as floats.
texts = ["a cat sleeps on the sofa", "a kitten naps on the couch", "interest rates rose again"]
e64 = client.embeddings.create(model=embed_id, input=texts)
ef = client.embeddings.create(model=embed_id, input=texts, encoding_format="float")
def cos(a, b):
    return sum(x * y for x, y in zip(a, b))
v = [d.embedding for d in e64.data]
report["embeddings"] = {
    "n": len(v), "dims": [len(x) for x in v],
    "same_as_float": all(max(abs(a - b) for a, b in zip(x, y.embedding)) < 1e-6
                         for x, y in zip(v, ef.data)),
    "near": cos(v[0], v[1]), "far": cos(v[0], v[2]),
    "tokens": e64.usage.prompt_tokens,
}

# Eight clients streaming at once: every one is answered whole.
def one(i, out):
    started = time.monotonic()
    first_at, n, done, fin = None, 0, False, None
    for chunk in client.chat.completions.create(
        model=model, max_tokens=16, temperature=0.7, seed=i, stream=True,
        messages=[{"role": "user", "content": f"Say something about the number {i}."}],
    ):
        for c in chunk.choices:
            if c.delta.content:
                first_at = first_at or time.monotonic()
                n += 1
            if c.finish_reason:
                fin = c.finish_reason
    out[i] = {"ttft": (first_at or time.monotonic()) - started, "pieces": n, "finish": fin}
results = {}
threads = [threading.Thread(target=one, args=(i, results)) for i in range(8)]
for t in threads:
    t.start()
for t in threads:
    t.join()
report["concurrent"] = [results.get(i) for i in range(8)]

# A client that goes away mid-stream: its generation stops, and the next request is served
# without waiting for the tokens it would have had.
speed = whole.model_extra["timings"]
per_token = speed["predicted_ms"] / max(speed["predicted_n"], 1) / 1000
long_budget = 3000
stream = client.chat.completions.create(
    model=model, messages=[{"role": "user", "content": "Count upwards from 1."}],
    max_tokens=long_budget, stream=True, extra_body={"ignore_eos": True})
got = 0
for chunk in stream:
    got += 1
    if got >= 3:
        break
stream.close()
left_at = time.monotonic()
after = client.chat.completions.create(model=model, messages=ask, temperature=0, max_tokens=4)
report["disconnect"] = {
    "next_wait_s": time.monotonic() - left_at,
    "abandoned_would_take_s": long_budget * per_token,
    "next_finish": after.choices[0].finish_reason,
}

# Errors come back as the client's own exceptions.
try:
    client.chat.completions.create(model=model, messages=[{"role": "robot", "content": "x"}])
    report["bad_role"] = None
except openai.BadRequestError as e:
    report["bad_role"] = {"status": e.status_code, "param": e.body.get("param")}

print(json.dumps(report))
