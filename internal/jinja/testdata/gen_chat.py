#!/usr/bin/env python3
"""Writes chat_cases.json: whole conversations (tools, tool calls, tool
results, reasoning) rendered by Python Jinja2 in transformers' environment
with the chat templates under ../../../../shared (the Qwen3 tokenizer_config
and every GGUF file's tokenizer.chat_template). Messages are shaped as
RenderChat shapes them: tool calls as {"id", "type": "function",
"function": {"name", "arguments": <decoded JSON object>}}, and name /
tool_call_id only when set.

Run from this directory with Jinja2 3.1: python3 gen_chat.py
"""
import glob
import json
import os
import struct

from gen_features import env

SHARED = os.path.join("..", "..", "..", "..", "shared", "testdata", "tokenizer")


def gguf_chat_template(path):
    """The tokenizer.chat_template string of a GGUF file, or None."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:4] != b"GGUF":
        return None
    off = 8
    _, n_kv = struct.unpack_from("<QQ", data, off)
    off += 16
    sizes = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}

    def string(o):
        (n,) = struct.unpack_from("<Q", data, o)
        return data[o + 8:o + 8 + n].decode("utf-8"), o + 8 + n

    def skip(t, o):
        if t == 8:
            return string(o)[1]
        if t == 9:
            et, n = struct.unpack_from("<IQ", data, o)
            o += 12
            for _ in range(n):
                o = skip(et, o)
            return o
        return o + sizes[t]

    for _ in range(n_kv):
        key, off = string(off)
        (t,) = struct.unpack_from("<I", data, off)
        off += 4
        if key == "tokenizer.chat_template" and t == 8:
            return string(off)[0]
        off = skip(t, off)
    return None


TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "Current weather in a city.",
          "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "City name, e.g. Zürich"},
                                                          "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
                         "required": ["city"]}}},
         {"type": "function", "function": {"name": "now", "description": "The time.", "parameters": {"type": "object", "properties": {}}}}]

CALL = {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Zürich", "unit": "celsius"}}}
CALL2 = {"id": "call_2", "type": "function", "function": {"name": "now", "arguments": {}}}

CONVERSATIONS = {
    "tools_first_turn": dict(messages=[{"role": "system", "content": "You are a helpful assistant."},
                                       {"role": "user", "content": "Weather in Zürich?"}],
                             tools=TOOLS, add_generation_prompt=True),
    "tools_no_system": dict(messages=[{"role": "user", "content": "Weather?"}], tools=TOOLS, add_generation_prompt=True),
    "tool_call_round_trip": dict(messages=[
        {"role": "user", "content": "Weather in Zürich, and the time?"},
        {"role": "assistant", "content": "", "tool_calls": [CALL, CALL2]},
        {"role": "tool", "content": "{\"temp\": 21}", "tool_call_id": "call_1"},
        {"role": "tool", "content": "12:00", "tool_call_id": "call_2"},
        {"role": "assistant", "content": "<think>\nUse the tool output.\n</think>\n\nIt is 21 °C at noon."},
        {"role": "user", "content": "Thanks!"}], tools=TOOLS, add_generation_prompt=True),
    "reasoning_last_turn": dict(messages=[
        {"role": "user", "content": "2+2?"},
        {"role": "assistant", "content": "<think>\nEasy.\n</think>\n\n4"}], add_generation_prompt=False),
    "assistant_text_and_call": dict(messages=[
        {"role": "user", "content": "Weather?"},
        {"role": "assistant", "content": "Let me check.", "tool_calls": [CALL]},
        {"role": "tool", "content": "sunny"}], add_generation_prompt=True, vars={"enable_thinking": False}),
    "plain": dict(messages=[{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"},
                            {"role": "user", "content": "Bye"}], add_generation_prompt=True),
}


def templates():
    with open(os.path.join(SHARED, "hf", "qwen3", "tokenizer_config.json")) as f:
        yield "hf/qwen3", json.load(f)["chat_template"], {"eos_token": "<|im_end|>"}
    for path in sorted(glob.glob(os.path.join(SHARED, "*.gguf"))):
        src = gguf_chat_template(path)
        if src is not None:
            yield os.path.basename(path), src, {"bos_token": "<s>", "eos_token": "</s>"}


def main():
    out = []
    for source, src, tokens in templates():
        tmpl = env.from_string(src)
        for name, conv in CONVERSATIONS.items():
            variables = dict(tokens, add_generation_prompt=conv["add_generation_prompt"], **conv.get("vars", {}))
            if "tools" in conv:
                variables["tools"] = conv["tools"]
            case = {"name": name, "template": source, "messages": conv["messages"], "variables": variables}
            try:
                case["want"] = tmpl.render(messages=conv["messages"], **variables)
            except Exception as exc:
                case["python_error"] = "%s: %s" % (type(exc).__name__, exc)
            out.append(case)
    with open("chat_cases.json", "w") as f:
        json.dump(out, f, ensure_ascii=False, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
