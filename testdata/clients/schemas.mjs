// Prints the structured-output corpus: each zod shape of shapes.mjs as the
// JSON Schema zod 4 (z.toJSONSchema), the AI SDK (zodSchema), the openai
// SDK (zodResponseFormat) and LangChain (toJsonSchema) write it; a library
// that refuses a shape itself records its error.
import { z } from "zod";
import { zodSchema } from "ai";
import { zodResponseFormat } from "openai/helpers/zod";
import { toJsonSchema } from "@langchain/core/utils/json_schema";
import { shapes } from "./shapes.mjs";

const generators = {
  zod: (s) => z.toJSONSchema(s),
  "ai-sdk": (s) => zodSchema(s).jsonSchema,
  "openai-sdk": (s) => zodResponseFormat(s, "shape").json_schema.schema,
  langchain: (s) => toJsonSchema(s),
};
const out = [];
for (const [name, shape] of Object.entries(shapes)) {
  for (const [generator, write] of Object.entries(generators)) {
    try {
      out.push({ generator, name, schema: await write(shape) });
    } catch (e) {
      out.push({ generator, name, library_error: String(e.message).split("\n")[0] });
    }
  }
}
console.log(JSON.stringify(out, null, 1));
