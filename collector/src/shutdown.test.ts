/** The bounded steps of a stop: a step past its bound is logged by name, cut off, and makes the stop unclean. */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { createLogger } from './telemetry/logger.ts';
import { ShutdownSteps, unboundedStep } from './shutdown.ts';

function steps(): { steps: ShutdownSteps; lines: () => Record<string, unknown>[] } {
  const out: string[] = [];
  const logger = createLogger({ level: 'debug', write: (l) => out.push(l) });
  return { steps: new ShutdownSteps(logger), lines: () => out.map((l) => JSON.parse(l) as Record<string, unknown>) };
}

describe('ShutdownSteps', () => {
  it('a step done in time is clean', async () => {
    const { steps: s, lines } = steps();
    expect(await s.run('quick', 1000, async () => 'anything')).toBe(true);
    expect(s.unfinished).toEqual([]);
    expect(lines()).toEqual([]);
  });

  it('a step past its bound is logged by name, cut off, and left unfinished', async () => {
    const { steps: s, lines } = steps();
    let release: () => void = () => {};
    const t0 = performance.now();
    const ok = await s.run('hung', 100, () => new Promise<void>((r) => (release = r)), () => release());
    expect(ok).toBe(false);
    expect(performance.now() - t0).toBeLessThan(1000);
    expect(s.unfinished).toEqual(['hung']);
    expect(lines()).toMatchObject([{ level: 'warn', msg: 'shutdown step timed out', step: 'hung', timeoutMs: 100 }]);
  });

  it('a step whose work cannot be cut off costs its bound and a short grace, no more', async () => {
    const { steps: s } = steps();
    const t0 = performance.now();
    expect(await s.run('stuck', 100, () => new Promise(() => {}))).toBe(false);
    expect(performance.now() - t0).toBeLessThan(1000);
  });

  it('in a process with nothing else left to run, a stop goes on past a step cut off while it waits on nothing', async () => {
    // The step's work holds no handle (a promise behind a connection already closed): the grace after its bound
    // must keep the process alive itself, or Node exits in the middle of the stop.
    const script = `import { ShutdownSteps } from ${JSON.stringify(new URL('./shutdown.ts', import.meta.url).href)};
      const steps = new ShutdownSteps({ warn: () => {} });
      await steps.run('stuck', 50, () => new Promise(() => {}));
      process.stdout.write('next step ' + steps.unfinished.join());`;
    const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script], { timeout: 10_000 });
    expect(stdout).toBe('next step stuck');
  });

  it('a step that fails, or says it could not do its job, leaves the stop unclean', async () => {
    const { steps: s, lines } = steps();
    expect(await s.run('failing', 1000, () => Promise.reject(new Error('boom')))).toBe(false);
    expect(await s.run('undone', 1000, async () => false)).toBe(false);
    expect(s.unfinished).toEqual(['failing', 'undone']);
    expect(lines()).toMatchObject([{ msg: 'shutdown step failed', step: 'failing' }]);
  });

  it('a watch times out once the oldest piece of work in flight has waited its bound, counted from the start of the watch', async () => {
    const { steps: s, lines } = steps();
    let oldest: number | undefined = performance.now() - 60_000;
    let cut = 0;
    const t0 = performance.now();
    const stop = s.watch('waiting', 150, () => oldest, () => {
      cut++;
      oldest = undefined;
    });
    while (cut === 0 && performance.now() - t0 < 10_000) await new Promise((r) => setTimeout(r, 10));
    stop();
    expect(cut).toBe(1);
    expect(performance.now() - t0).toBeGreaterThanOrEqual(140);
    expect(s.unfinished).toEqual(['waiting']);
    expect(lines()).toMatchObject([{ msg: 'shutdown step timed out', step: 'waiting', timeoutMs: 150 }]);
  });

  it('a watch with nothing waiting long enough does nothing', async () => {
    const { steps: s } = steps();
    const stop = s.watch('waiting', 100, () => performance.now(), () => {
      throw new Error('cut off');
    });
    await new Promise((r) => setTimeout(r, 300));
    stop();
    expect(s.unfinished).toEqual([]);
  });

  it('names the steps begun and not over yet, bounded or not, in the order they began', async () => {
    const { steps: s } = steps();
    let release: () => void = () => {};
    const held = new Promise<void>((r) => (release = r));
    const bounded = s.run('bounded', 5000, () => held);
    const unbounded = s.unbounded('unbounded', () => held);
    const tracked = s.track('tracked', () => held.then(() => 'drained'));
    const failing = s.track('failing', () => held.then(() => Promise.reject(new Error('boom'))));
    expect(s.pending).toEqual(['bounded', 'unbounded', 'tracked', 'failing']);
    release();
    expect([await bounded, await unbounded, await tracked, await failing.catch((err: unknown) => (err as Error).message)]).toEqual([true, true, 'drained', 'boom']);
    expect(s.pending).toEqual([]);
    // Cut off, a step is over: the stop went on without it, and it is unfinished instead.
    await s.run('stuck', 50, () => new Promise(() => {}));
    expect([s.pending, s.unfinished]).toEqual([[], ['stuck']]);
    expect(await s.unbounded('undone', async () => false)).toBe(false);
  });

  it('names a watch among the steps pending while something it watches waits, and as unfinished once it timed out', async () => {
    const { steps: s } = steps();
    let oldest: number | undefined;
    let release: () => void = () => {};
    const drain = s.track('drain', () => new Promise<void>((r) => (release = r)));
    const unwatch = s.watch('waiting', 150, () => oldest, () => (oldest = undefined));
    // Nothing waits: the watch waits on nothing either.
    expect(s.pending).toEqual(['drain']);
    oldest = performance.now();
    expect(s.pending).toEqual(['drain', 'waiting']);
    const t0 = performance.now();
    while (s.unfinished.length === 0 && performance.now() - t0 < 10_000) await new Promise((r) => setTimeout(r, 10));
    expect([s.pending, s.unfinished]).toEqual([['drain'], ['waiting']]);
    // Ended before its bound, a watch is over too.
    const ended = s.watch('ended', 60_000, () => performance.now(), () => {});
    expect(s.pending).toEqual(['drain', 'ended']);
    unwatch();
    ended();
    release();
    await drain;
    expect([s.pending, s.unfinished]).toEqual([[], ['waiting']]);
  });

  it('unbounded, a step runs as it comes and reports whether it did its job', async () => {
    expect(await unboundedStep('x', async () => undefined)).toBe(true);
    expect(await unboundedStep('x', async () => false)).toBe(false);
  });
});
