// The openai npm SDK's embeddings: by default it asks for base64 and
// decodes the float32 bytes itself.
import OpenAI from "openai";

const client = new OpenAI({ baseURL: process.env.BASE_URL, apiKey: "none", maxRetries: 0 });
const r = await client.embeddings.create({ model: process.env.MODEL, input: ["the cat sat", "on the mat"] });
const f = await client.embeddings.create({ model: process.env.MODEL, input: "the cat sat", encoding_format: "float" });
console.log(JSON.stringify({
  count: r.data.length, dims: r.data.map((d) => d.embedding.length),
  norm: r.data[0].embedding.reduce((s, x) => s + x * x, 0),
  sameAsFloat: r.data[0].embedding.every((x, i) => Math.abs(x - f.data[0].embedding[i]) < 1e-6),
  usage: r.usage.prompt_tokens,
}));
