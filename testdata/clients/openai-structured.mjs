// The openai npm SDK's structured outputs: zodResponseFormat with
// chat.completions.parse (the SDK parses and validates the reply with
// zod), and the same schema streamed.
import OpenAI from "openai";
import { zodResponseFormat } from "openai/helpers/zod";
import { z } from "zod";

const client = new OpenAI({ baseURL: process.env.BASE_URL, apiKey: "none", maxRetries: 0 });
const model = process.env.MODEL;
const City = z.object({
  name: z.string().max(40),
  population: z.number().int().min(0),
  country: z.enum(["FR", "DE", "JP"]),
  districts: z.array(z.string().max(20)).max(3),
  mayor: z.string().max(30).nullable(),
});

const parsed = await client.chat.completions.parse({
  model,
  messages: [{ role: "user", content: "Describe a city as JSON." }],
  response_format: zodResponseFormat(City, "city"),
  max_tokens: 400, temperature: 1, seed: 1,
});
const choice = parsed.choices[0];

const stream = client.chat.completions.stream({
  model,
  messages: [{ role: "user", content: "Another city." }],
  response_format: zodResponseFormat(City, "city"),
  max_tokens: 400, temperature: 1, seed: 2,
});
const final = await stream.finalChatCompletion();

console.log(JSON.stringify({
  parsed: choice.message.parsed, finish: choice.finish_reason,
  streamed: final.choices[0].message.parsed, streamedFinish: final.choices[0].finish_reason,
}));
