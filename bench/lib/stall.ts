/**
 * The longest the event loop was held (ms) while `work` ran: the longest time between two runs of a 1 ms timer
 * (the first since the start, the last until the end), what a request or probe arriving then would have waited.
 * The benchmarks' stall figures and the tests' bounds on them read it alike.
 */
export async function longestStall(work: () => Promise<unknown>): Promise<number> {
  let last = performance.now();
  let longest = 0;
  const tick = (): void => {
    const now = performance.now();
    longest = Math.max(longest, now - last);
    last = now;
  };
  const timer = setInterval(tick, 1);
  try {
    await work();
  } finally {
    clearInterval(timer);
    tick();
  }
  return longest;
}
