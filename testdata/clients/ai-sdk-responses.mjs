// The Vercel AI SDK's default OpenAI provider, createOpenAI(...)(model),
// which speaks the Responses API: generateText, streamText, generateObject
// with a zod schema, and an agent loop: generateText with a tool the SDK
// executes and stopWhen: the first step must call the tool, later ones
// choose (tool_choice auto, which the simulator answers with a call at
// --sim-tool-call-rate), each sending the calls and their outputs back.
import { createOpenAI } from "@ai-sdk/openai";
import { generateObject, generateText, stepCountIs, streamText, tool } from "ai";
import { z } from "zod";

const provider = createOpenAI({ baseURL: process.env.BASE_URL, apiKey: "none" });
const model = provider(process.env.MODEL);

const text = await generateText({ model, maxRetries: 0, maxOutputTokens: 40, prompt: "Say hello." });

const streamed = streamText({ model, maxRetries: 0, maxOutputTokens: 30, system: "Be brief.", prompt: "Tell me a story." });
let deltas = "";
for await (const d of streamed.textStream) deltas += d;

const { object } = await generateObject({
  model, maxRetries: 0, maxOutputTokens: 300,
  schema: z.object({ title: z.string().max(30), year: z.number().int().min(1900).max(2100), genres: z.array(z.enum(["drama", "comedy"])).max(2) }),
  prompt: "Invent a film.",
});

let executed = 0;
const agent = await generateText({
  model, maxRetries: 0, maxOutputTokens: 200, stopWhen: stepCountIs(4),
  prepareStep: ({ stepNumber }) => ({ toolChoice: stepNumber === 0 ? "required" : "auto" }),
  // One call a step: a sampled model under "required" may otherwise list
  // calls until max_output_tokens cuts the list, and the SDK executes
  // none of a step that ended on length.
  providerOptions: { openai: { parallelToolCalls: false } },
  tools: { lookup: tool({ description: "Look a word up", inputSchema: z.object({ word: z.string().max(15) }), execute: async ({ word }) => { executed++; return `${word}: a happy accident`; } }) },
  prompt: "Define serendipity.",
});

console.log(JSON.stringify({
  text: { text: text.text, finish: text.finishReason, inputTokens: text.usage.inputTokens, responseId: text.response.id },
  streamed: { text: await streamed.text, deltas, finish: await streamed.finishReason },
  object,
  agent: {
    steps: agent.steps.length, executed, finish: agent.finishReason, text: agent.text,
    calls: agent.steps.flatMap((s) => s.toolCalls.map((c) => ({ name: c.toolName, input: c.input }))),
    inputTokens: agent.steps.map((s) => s.usage.inputTokens),
    callsByStep: agent.steps.map((s) => s.toolCalls.length),
  },
}));
