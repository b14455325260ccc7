// The zod schemas of the structured-output corpus: what agent code writes
// with zod 4 (formats, refinements, unions, records, recursion), each
// turned into JSON Schema by the libraries that send it (schemas.mjs) and
// sent to the server through the AI SDK (ai-sdk-schemas.mjs).
import { z } from "zod";

const Node = z.object({ value: z.string().max(12), get children() { return z.array(Node).max(2); } });

export const shapes = {
  email: z.object({ email: z.email() }),
  uuid: z.object({ id: z.uuid() }),
  url: z.object({ u: z.url() }),
  datetime: z.object({ at: z.iso.datetime() }),
  date: z.object({ d: z.iso.date() }),
  time: z.object({ t: z.iso.time() }),
  ipv4: z.object({ ip: z.ipv4() }),
  ipv6: z.object({ ip: z.ipv6() }),
  cuid: z.object({ c: z.cuid() }),
  regex: z.object({ code: z.string().regex(/^[A-Z]{3}-\d{2}$/) }),
  strlen: z.object({ s: z.string().min(2).max(8) }),
  startsWith: z.object({ s: z.string().startsWith("ab").max(10) }),
  int: z.object({ n: z.number().int().min(1).max(10) }),
  positive: z.object({ n: z.number().positive() }),
  multipleOf: z.object({ n: z.number().multipleOf(5) }),
  float: z.object({ n: z.number().min(0.5).max(2.5) }),
  enum: z.object({ c: z.enum(["a", "b"]) }),
  literal: z.object({ k: z.literal("x") }),
  nullable: z.object({ s: z.string().max(10).nullable() }),
  optional: z.object({ s: z.string().max(10).optional(), n: z.number() }),
  default: z.object({ s: z.string().max(10).default("x") }),
  array: z.object({ xs: z.array(z.string().max(10)).min(1).max(3) }),
  tuple: z.object({ t: z.tuple([z.string().max(10), z.number()]) }),
  record: z.object({ r: z.record(z.string().max(10), z.number()) }),
  recordEnum: z.object({ r: z.record(z.enum(["a", "b"]), z.number()) }),
  discriminated: z.object({
    shape: z.discriminatedUnion("kind", [z.object({ kind: z.literal("circle"), r: z.number() }), z.object({ kind: z.literal("square"), side: z.number() })]),
  }),
  union: z.object({ v: z.union([z.string().max(10), z.number()]) }),
  unionObjects: z.object({ v: z.union([z.object({ a: z.string().max(10) }), z.object({ b: z.number() })]) }),
  intersection: z.object({ v: z.intersection(z.object({ a: z.string().max(10) }), z.object({ b: z.number() })) }),
  recursive: Node,
  strict: z.strictObject({ a: z.string().max(10) }),
  loose: z.looseObject({ a: z.string().max(10) }),
  nested: z.object({ user: z.object({ name: z.string().max(10), tags: z.array(z.enum(["x", "y"])).max(3) }) }),
};
