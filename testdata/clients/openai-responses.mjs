// The openai npm SDK's Responses API: responses.create with instructions,
// responses.stream (the SDK assembles the events into the final
// response), function tools with a required choice and the round trip of
// the call's output by previous_response_id, zodTextFormat with
// responses.parse (the SDK validates the answer with zod), and a call cut
// by max_output_tokens.
import OpenAI from "openai";
import { zodResponsesFunction, zodTextFormat } from "openai/helpers/zod";
import { z } from "zod";

const client = new OpenAI({ baseURL: process.env.BASE_URL, apiKey: "none", maxRetries: 0 });
const model = process.env.MODEL;

const created = await client.responses.create({ model, instructions: "Be brief.", input: "Say hello.", max_output_tokens: 40, temperature: 1 });

const stream = client.responses.stream({ model, input: [{ role: "user", content: [{ type: "input_text", text: "Tell me a story." }] }], max_output_tokens: 30 });
let deltas = "";
const eventTypes = new Set();
stream.on("response.output_text.delta", (e) => { deltas += e.delta; });
for await (const e of stream) eventTypes.add(e.type);
const streamed = await stream.finalResponse();

const tools = [zodResponsesFunction({ name: "get_weather", description: "Weather for a city", parameters: z.object({ city: z.string().max(20) }) })];
const called = await client.responses.parse({ model, input: "Weather in Paris?", tools, tool_choice: "required", parallel_tool_calls: false, max_output_tokens: 200, temperature: 1 });
const call = called.output.find((o) => o.type === "function_call");
const followUp = await client.responses.create({
  model, previous_response_id: called.id, max_output_tokens: 20,
  input: [{ type: "function_call_output", call_id: call.call_id, output: "18 degrees, sunny" }],
});

const Film = z.object({ title: z.string().max(30), year: z.number().int().min(1900).max(2100) });
const parsed = await client.responses.parse({ model, input: "Invent a film.", text: { format: zodTextFormat(Film, "film") }, max_output_tokens: 300, temperature: 1 });

const cut = await client.responses.create({ model, input: "Weather?", tools, tool_choice: "required", max_output_tokens: 40 });

console.log(JSON.stringify({
  created: { id: created.id, text: created.output_text, status: created.status, usage: created.usage },
  streamed: { text: streamed.output_text, deltas, status: streamed.status, events: [...eventTypes] },
  call: { name: call.name, arguments: call.arguments, parsed: call.parsed_arguments, callId: call.call_id },
  followUp: { text: followUp.output_text, previous: followUp.previous_response_id, inputTokens: followUp.usage.input_tokens, firstInputTokens: called.usage.input_tokens },
  parsed: parsed.output_parsed,
  cut: { status: cut.status, reason: cut.incomplete_details?.reason, output: cut.output.map((o) => ({ type: o.type, name: o.name, arguments: o.arguments })) },
}));
