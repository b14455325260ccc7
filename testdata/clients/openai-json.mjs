// What the simulated model writes where a schema leaves it a choice, read
// through the openai SDK's chat.completions.parse (zodResponseFormat) and
// json_object mode, seeded: arrays without minItems, objects of optional
// properties, free keys and values. The test asks that they look like a
// model's: filled, keys that are words, numbers that are numbers.
import OpenAI from "openai";
import { zodResponseFormat } from "openai/helpers/zod";
import { z } from "zod";

const client = new OpenAI({ baseURL: process.env.BASE_URL, apiKey: "none", maxRetries: 0 });
const model = process.env.MODEL;

const Report = z.object({ scores: z.array(z.number()), tags: z.array(z.string()) });
const optional = { type: "object", properties: { note: { type: "string" }, count: { type: "integer" }, done: { type: "boolean" } }, additionalProperties: false };
const reports = [];
const optionals = [];
const objects = [];
for (let seed = 1; seed <= 8; seed++) {
  const r = await client.chat.completions.parse({
    model, seed, max_tokens: 400, messages: [{ role: "user", content: "Report." }], response_format: zodResponseFormat(Report, "report"),
  });
  reports.push(r.choices[0].message.parsed);
  const p = await client.chat.completions.create({
    model, seed, max_tokens: 400, messages: [{ role: "user", content: "Anything." }], response_format: { type: "json_schema", json_schema: { name: "optional", schema: optional } },
  });
  optionals.push(JSON.parse(p.choices[0].message.content));
  const o = await client.chat.completions.create({
    model, seed, max_tokens: 400, messages: [{ role: "user", content: "Any JSON object." }], response_format: { type: "json_object" },
  });
  objects.push({ text: o.choices[0].message.content, finish: o.choices[0].finish_reason });
}
console.log(JSON.stringify({ reports, optionals, objects }));
