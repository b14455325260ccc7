// The Vercel AI SDK, as agent frameworks use it: generateObject with a zod
// schema, generateText with a required tool call, and embed, through its
// OpenAI-compatible provider.
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { embed, generateObject, generateText, tool } from "ai";
import { z } from "zod";

const provider = createOpenAICompatible({ name: "glassbox", baseURL: process.env.BASE_URL, apiKey: "none", supportsStructuredOutputs: true });
const model = provider.chatModel(process.env.MODEL);

const { object } = await generateObject({
  model, maxRetries: 0, seed: 1, temperature: 1, maxOutputTokens: 400,
  schema: z.object({ title: z.string().max(30), year: z.number().int().min(1900).max(2100), genres: z.array(z.enum(["drama", "comedy", "horror"])).max(2) }),
  prompt: "Invent a film.",
});

const text = await generateText({
  model, maxRetries: 0, seed: 2, temperature: 1, maxOutputTokens: 1500, toolChoice: "required",
  tools: { lookup: tool({ description: "Look a word up", inputSchema: z.object({ word: z.string().max(15) }) }) },
  prompt: "Define serendipity.",
});

const result = { object, toolCalls: text.toolCalls.map((c) => ({ name: c.toolName, input: c.input })) };
if (process.env.EMBEDDINGS) {
  const { embedding } = await embed({ model: provider.textEmbeddingModel(process.env.MODEL), value: "sunny day", maxRetries: 0 });
  result.embeddingDims = embedding.length;
}
console.log(JSON.stringify(result));
