// LangChain's ChatOpenAI (@langchain/openai) as agent code uses it:
// invoke and stream, withStructuredOutput with a zod schema, bindTools with
// a forced tool, over chat completions and over the Responses API
// (useResponsesApi).
import { ChatOpenAI } from "@langchain/openai";
import { tool } from "@langchain/core/tools";
import { z } from "zod";

const result = {};
for (const useResponsesApi of [false, true]) {
  const llm = new ChatOpenAI({ model: process.env.MODEL, apiKey: "none", configuration: { baseURL: process.env.BASE_URL }, maxRetries: 0, maxTokens: 200, useResponsesApi });
  const invoked = await llm.invoke("Say hello.");
  let streamed = "";
  for await (const chunk of await llm.stream("Tell me a story.")) streamed += typeof chunk.content === "string" ? chunk.content : chunk.content.map((c) => c.text ?? "").join("");
  const structured = await llm.withStructuredOutput(z.object({ name: z.string().max(20), age: z.number().int().min(0).max(120) }), { name: "person" }).invoke("Describe a person.");
  const lookup = tool(async ({ word }) => `${word}: found`, { name: "lookup", description: "Look a word up", schema: z.object({ word: z.string().max(15) }) });
  const called = await llm.bindTools([lookup], { tool_choice: "lookup" }).invoke("Define serendipity.");
  result[useResponsesApi ? "responses" : "chat"] = {
    invoked: typeof invoked.content === "string" ? invoked.content : invoked.text, streamed, structured,
    calls: called.tool_calls.map((c) => ({ name: c.name, args: c.args })),
  };
}
console.log(JSON.stringify(result));
