// The OpenAI Agents SDK (@openai/agents) over the Responses API, with
// Agents that name no model (the SDK's default model, with the default
// settings it sends for it: reasoning effort "none", text.verbosity
// "low"): one with a zod outputType (text.format json_schema), one with a
// function tool it calls (required) and the SDK executes, stopping there;
// and where the model ends its prose by itself (PROSE=1), one that answers
// in prose, the tool loop run on (the SDK's reset to auto after the first
// call, the call's output sent back), and an Agent naming the served
// model. Every request body the SDK sends is recorded, so the test reads
// what was asked as well as what came back.
import OpenAI from "openai";
import { Agent, MaxTurnsExceededError, getDefaultModel, getDefaultModelSettings, run, setDefaultOpenAIClient, setTracingDisabled, tool } from "@openai/agents";
import { z } from "zod";

const bodies = [];
const recordingFetch = async (url, init) => {
  if (init?.body && typeof init.body === "string") bodies.push(JSON.parse(init.body));
  return fetch(url, init);
};
setDefaultOpenAIClient(new OpenAI({ baseURL: process.env.BASE_URL, apiKey: "none", maxRetries: 0, fetch: recordingFetch }));
setTracingDisabled(true);

// since runs f and returns the bodies it sent with its result.
async function since(f) {
  const first = bodies.length;
  try {
    return { ...(await f()), sent: bodies.slice(first) };
  } catch (e) {
    return { error: `${e.constructor.name}: ${e.message}`, sent: bodies.slice(first) };
  }
}

// A model that rarely ends by itself (the GGUF of random weights) ends
// its prose cut by the token limit, which the SDK raises as an error: the
// prose turns run where PROSE is set (the simulator).
const prose = process.env.PROSE === "1";
const defaults = getDefaultModelSettings();

const Film = z.object({ title: z.string().max(30), year: z.number().int().min(1900).max(2100), genres: z.array(z.enum(["drama", "comedy"])).max(2) });
const structured = await since(async () => {
  const r = await run(new Agent({ name: "critic", instructions: "Invent a film.", outputType: Film }), "A film, please.");
  return { output: r.finalOutput };
});

let executed = 0;
const lookup = tool({
  name: "lookup", description: "Look a word up", parameters: z.object({ word: z.string().max(15) }),
  execute: async ({ word }) => { executed++; return `${word}: a happy accident`; },
});
const settings = { ...defaults, toolChoice: "required", parallelToolCalls: false };
const firstTool = await since(async () => {
  const agent = new Agent({ name: "dictionary", instructions: "Use the tool.", tools: [lookup], modelSettings: settings, toolUseBehavior: "stop_on_first_tool" });
  const r = await run(agent, "Define serendipity.");
  return { output: r.finalOutput, executed };
});

let plain = null, loop = null, named = null;
if (prose) {
  plain = await since(async () => {
    const r = await run(new Agent({ name: "greeter", instructions: "Be brief." }), "Say hello.");
    return { output: r.finalOutput, responseId: r.lastResponseId };
  });
  executed = 0;
  loop = await since(async () => {
    const agent = new Agent({ name: "dictionary", instructions: "Use the tool.", tools: [lookup], modelSettings: settings });
    try {
      const r = await run(agent, "Define serendipity.", { maxTurns: 4 });
      return { output: r.finalOutput, ended: true, executed };
    } catch (e) {
      if (e instanceof MaxTurnsExceededError) return { ended: false, executed }; // the model kept calling: the loop ran
      throw e;
    }
  });
  named = await since(async () => {
    const r = await run(new Agent({ name: "named", model: process.env.MODEL }), "Say hello.");
    return { output: r.finalOutput };
  });
}

// what keeps the test's checks short: each request's model and the fields
// the defaults set.
const brief = (x) => x && ({
  ...x,
  sent: x.sent.map((b) => ({
    model: b.model, reasoning: b.reasoning ?? null, verbosity: b.text?.verbosity ?? "", format: b.text?.format?.type ?? "",
    toolChoice: b.tool_choice ?? "", inputTypes: Array.isArray(b.input) ? b.input.map((i) => i.type ?? "message") : ["text"],
  })),
});

console.log(JSON.stringify({
  defaultModel: getDefaultModel(), defaults,
  structured: brief(structured), firstTool: brief(firstTool), plain: brief(plain), loop: brief(loop), named: brief(named),
}));
