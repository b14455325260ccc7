// The openai npm SDK's tool calling: zodFunction tools with a required and
// a named tool choice (the SDK parses and validates the arguments), a
// streamed call, the round trip with the tool's result, and a required
// call cut by max_tokens.
import OpenAI from "openai";
import { zodFunction } from "openai/helpers/zod";
import { z } from "zod";

const client = new OpenAI({ baseURL: process.env.BASE_URL, apiKey: "none", maxRetries: 0 });
const model = process.env.MODEL;
const tools = [
  zodFunction({ name: "get_weather", description: "Weather for a city", parameters: z.object({ city: z.string().max(20), unit: z.enum(["c", "f"]) }) }),
  zodFunction({ name: "get_time", parameters: z.object({ zone: z.enum(["UTC", "CET"]) }) }),
];
const messages = [{ role: "user", content: "What is the weather in Paris?" }];

const required = await client.chat.completions.parse({ model, messages, tools, tool_choice: "required", parallel_tool_calls: false, max_tokens: 500, temperature: 1, seed: 1 });
const named = await client.chat.completions.parse({
  model, messages, tools, tool_choice: { type: "function", function: { name: "get_weather" } }, max_tokens: 500, temperature: 1, seed: 2,
});

const stream = client.chat.completions.stream({ model, messages, tools, tool_choice: "required", max_tokens: 500, temperature: 1, seed: 3 });
const streamed = await stream.finalChatCompletion();

const call = named.choices[0].message.tool_calls[0];
const followUp = await client.chat.completions.create({
  model, tools, tool_choice: "none", max_tokens: 20,
  messages: [...messages, named.choices[0].message, { role: "tool", tool_call_id: call.id, content: "18 degrees, sunny" }],
});

// Cut by max_tokens, a required call is still a call (finish_reason length).
const cut = await client.chat.completions.create({ model, messages, tools, tool_choice: "required", max_tokens: 60, temperature: 1, seed: 4 });

const summary = (r) => ({
  finish: r.choices[0].finish_reason,
  calls: (r.choices[0].message.tool_calls ?? []).map((c) => ({ id: c.id, name: c.function.name, arguments: c.function.arguments, parsed: c.function.parsed_arguments })),
});
const cutSummary = summary(cut);
for (const c of cutSummary.calls) {
  try { c.parsed = JSON.parse(c.arguments); } catch { c.parsed = null; }
}
console.log(JSON.stringify({
  required: summary(required), named: summary(named), streamed: summary(streamed), followUp: followUp.choices[0].message.content,
  cut: cutSummary, cutContent: cut.choices[0].message.content,
}));
