// The structured-output corpus's zod shapes (shapes.mjs) through the AI
// SDK's generateObject, as agent code sends them: the SDK writes each as
// JSON Schema (zodSchema), sends it as response_format, and parses the
// answer with the zod schema itself. Each shape gives the object, or the
// error (a 400 naming what glassbox refuses).
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { generateObject } from "ai";
import { shapes } from "./shapes.mjs";

const provider = createOpenAICompatible({ name: "glassbox", baseURL: process.env.BASE_URL, apiKey: "none", supportsStructuredOutputs: true });
const model = provider.chatModel(process.env.MODEL);
const out = {};
for (const [name, schema] of Object.entries(shapes)) {
  try {
    const { object } = await generateObject({ model, schema, maxRetries: 0, maxOutputTokens: 600, seed: 1, temperature: 1, prompt: `Write a ${name}.` });
    out[name] = { object };
  } catch (e) {
    out[name] = { error: String(e.responseBody ?? e.message).slice(0, 400) };
  }
}
console.log(JSON.stringify(out));
