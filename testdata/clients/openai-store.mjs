// The openai npm SDK against the Responses store and the API's edges:
// responses.inputItems.list walked page by page (the SDK's cursor pages),
// responses.delete then retrieve (404), a background response polled with
// retrieve until it ends, another cancelled with responses.cancel while it
// runs, cancel of a synchronous response (400); reasoning {} and
// {effort: "none"} with text.verbosity "low" (what the Agents SDK sends for
// GPT-5.x) served, reasoning that asks for effort refused by name; a tool
// whose parameters are not a JSON Schema refused naming tools under
// tool_choice auto and none, over the Responses API and chat.
import OpenAI from "openai";

const client = new OpenAI({ baseURL: process.env.BASE_URL, apiKey: "none", maxRetries: 0 });
const model = process.env.MODEL;

// refusal runs f and reports the API error it raised (null if none).
async function refusal(f) {
  try {
    await f();
    return null;
  } catch (e) {
    return { status: e.status ?? 0, param: e.param ?? e.error?.param ?? "", message: e.message };
  }
}

// attempt runs f and returns its result, or what it raised: a server
// that lacks one of these answers fails its checks, not the script.
async function attempt(f) {
  try {
    return await f();
  } catch (e) {
    return { error: `${e.constructor.name}: ${e.message}` };
  }
}

const inputItems = await attempt(async () => {
  const created = await client.responses.create({
    model, max_output_tokens: 20,
    input: [{ role: "user", content: "first" }, { role: "developer", content: "second" }, { role: "user", content: [{ type: "input_text", text: "third" }] }],
  });
  const walked = [];
  for await (const it of client.responses.inputItems.list(created.id, { limit: 2 })) {
    walked.push({ id: it.id, type: it.type, role: it.role, text: it.content?.map((c) => c.text).join("") });
  }
  let pages = 0;
  for (let page = await client.responses.inputItems.list(created.id, { limit: 2 }); ; page = await page.getNextPage()) {
    pages++;
    if (!page.hasNextPage()) break;
  }
  const asc = await client.responses.inputItems.list(created.id, { limit: 2, order: "asc" });
  return { id: created.id, walked, pages, asc: asc.data.map((it) => it.id), ascHasMore: asc.has_more };
});

const deleted = await attempt(async () => {
  const created = await client.responses.create({ model, input: "Hi.", max_output_tokens: 5 });
  await client.responses.delete(created.id);
  return { afterDelete: await refusal(() => client.responses.retrieve(created.id)) };
});

const background = await attempt(async () => {
  const queued = await client.responses.create({ model, input: "Tell me a story.", background: true, max_output_tokens: 30 });
  const seen = [queued.status];
  let polled = queued;
  for (let i = 0; i < 2000 && (polled.status === "queued" || polled.status === "in_progress"); i++) {
    await new Promise((r) => setTimeout(r, 5));
    polled = await client.responses.retrieve(queued.id);
    if (seen[seen.length - 1] !== polled.status) seen.push(polled.status);
  }
  return { queued: queued.status, background: queued.background, seen, status: polled.status, text: polled.output_text, outputTokens: polled.usage?.output_tokens ?? 0 };
});

// Long enough (ignore_eos, vLLM's) to be running when the cancel arrives.
const cancel = await attempt(async () => {
  const long = await client.responses.create({ model, input: "Go on.", background: true, max_output_tokens: Number(process.env.LONG_TOKENS ?? 20000), ignore_eos: true });
  const cancelled = await client.responses.cancel(long.id);
  const final = await client.responses.retrieve(long.id);
  return { status: cancelled.status, final: final.status, background: cancelled.background };
});
const sync = await client.responses.create({ model, input: "Hi.", max_output_tokens: 5 });
const cancelSync = await refusal(() => client.responses.cancel(sync.id));

const reasoning = {
  agentDefaults: await attempt(async () => {
    const r = await client.responses.create({ model, input: "Say hi.", max_output_tokens: 10, reasoning: { effort: "none" }, text: { verbosity: "low" } });
    return { status: r.status, verbosity: r.text?.verbosity ?? "" };
  }),
  empty: await attempt(async () => ({ status: (await client.responses.create({ model, input: "Say hi.", max_output_tokens: 10, reasoning: {} })).status })),
  effort: await refusal(() => client.responses.create({ model, input: "Think.", max_output_tokens: 10, reasoning: { effort: "high" } })),
};

const objekt = { type: "objekt", properties: { city: { type: "string" } } };
const malformed = {
  responsesAuto: await refusal(() => client.responses.create({ model, input: "Weather?", max_output_tokens: 10, tools: [{ type: "function", name: "f", parameters: objekt }], tool_choice: "auto" })),
  chatAuto: await refusal(() => client.chat.completions.create({ model, messages: [{ role: "user", content: "Weather?" }], max_tokens: 10, tools: [{ type: "function", function: { name: "f", parameters: objekt } }], tool_choice: "auto" })),
  chatNone: await refusal(() => client.chat.completions.create({ model, messages: [{ role: "user", content: "Weather?" }], max_tokens: 10, tools: [{ type: "function", function: { name: "f", parameters: objekt } }], tool_choice: "none" })),
};

console.log(JSON.stringify({ inputItems, deleted, background, cancel, cancelSync, reasoning, malformed }));
