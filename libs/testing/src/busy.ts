/**
 * Sends again after a 429, as a partner does: one client's writes past its per-process write
 * slots, or waiting past lock_timeout at its stream's counter row, are answered 429 `rate_limited`
 * with Retry-After (docs/operations.md), and change nothing. How many there are depends on the
 * machine's speed, so a test asserts each request's final answer. Waits the Retry-After it is given
 * (at most `maxWaitMs`, with jitter so simultaneous senders spread out), up to `attempts` sends.
 */
export async function untilNotBusy<R extends { status: number; headers: Headers }>(send: () => Promise<R>, options: { attempts?: number; maxWaitMs?: number } = {}): Promise<R> {
  const attempts = options.attempts ?? 20;
  const maxWaitMs = options.maxWaitMs ?? 1_000;
  for (let attempt = 1; ; attempt++) {
    const response = await send();
    if (response.status !== 429 || attempt === attempts) return response;
    const retryAfterMs = Number(response.headers.get('retry-after') ?? 1) * 1_000;
    await new Promise((resolve) => setTimeout(resolve, Math.min(retryAfterMs, maxWaitMs) * (0.5 + Math.random() / 2)));
  }
}
