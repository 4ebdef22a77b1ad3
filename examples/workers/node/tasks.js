// The order workflow's tasks (examples/order.json), as plain async
// functions. Each receives the invocation (docs/PROTOCOL.md section 5.3)
// plus `delivery`, `idempotencyKey` and an AbortSignal, and returns the
// task's output (any JSON value) or throws. Throw a TaskError to choose
// the error's code or to skip the remaining attempts.

import { createHash } from "node:crypto";

export class TaskError extends Error {
  // retryAfterMs asks for the next attempt after this delay (an
  // upstream's 429 Retry-After) instead of the policy's backoff;
  // closeTask also closes the task version for as long (docs/POLICY.md).
  constructor(message, { code, nonRetryable = false, retryAfterMs, closeTask = false } = {}) {
    super(message);
    this.name = "TaskError";
    this.code = code;
    this.nonRetryable = nonRetryable;
    this.retryAfterMs = retryAfterMs;
    this.closeTask = closeTask;
  }
}

const STOCK = { tea: 10, mug: 5 };
const PRICE = { tea: 4.5, mug: 8 };

function orderLine(w) {
  if (w === null || typeof w !== "object" || typeof w.sku !== "string" || !Number.isFinite(w.qty)) {
    // The same input fails the same way every time: do not retry.
    throw new TaskError(`"with" must be {"sku": string, "qty": number}, got ${JSON.stringify(w)}`, {
      code: "BAD_INPUT",
      nonRetryable: true,
    });
  }
  return w;
}

export const tasks = {
  "check-stock@1": async (inv) => {
    const { sku, qty } = orderLine(inv.with);
    return { available: qty <= (STOCK[sku] ?? 0) };
  },

  "quote-price@1": async (inv) => {
    const { sku, qty } = orderLine(inv.with);
    if (!(sku in PRICE)) {
      throw new TaskError(`no price for sku ${sku}`, { code: "UNKNOWN_SKU", nonRetryable: true });
    }
    return { total: qty * PRICE[sku] };
  },

  "score-fraud@1": async (inv) => {
    const customer = inv.with?.customer;
    if (typeof customer !== "string") {
      throw new TaskError('"with.customer" must be a string', { code: "BAD_INPUT", nonRetryable: true });
    }
    return { score: customer.startsWith("c-fraud") ? 0.95 : 0.1 };
  },

  // The tracking number is derived from the idempotency key, so that a
  // retried or redelivered attempt books the same parcel.
  "ship@1": async (inv) => {
    const order = inv.input?.order;
    if (order === undefined) {
      throw new TaskError("the input has no order", { code: "BAD_INPUT", nonRetryable: true });
    }
    const digest = createHash("sha256").update(inv.idempotencyKey).digest("hex");
    return { tracking: `T-${digest.slice(0, 10)}`, sku: order.sku, qty: order.qty };
  },

  "notify@1": async (inv) => {
    if (typeof inv.input?.tracking !== "string") {
      throw new TaskError("the input has no tracking number", { code: "BAD_INPUT", nonRetryable: true });
    }
    return { notified: true, tracking: inv.input.tracking, channel: "email" };
  },
};
