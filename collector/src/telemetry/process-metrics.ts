/** The process's own figures for /metrics: which hookwatch runs, since when, its memory and CPU time. */
import type { MetricsRegistry } from './metrics.ts';

export function registerProcessMetrics(metrics: MetricsRegistry, opts: { version?: string; now?: () => number } = {}): void {
  const startedSeconds = (opts.now ?? Date.now)() / 1000;
  metrics.gauge({ name: 'hookwatch_build_info', help: 'Always 1; labels say which hookwatch and Node.js are running.', labelNames: ['version', 'node'] })
    .set({ version: opts.version ?? 'unknown', node: process.versions.node }, 1);
  metrics.gauge({ name: 'process_start_time_seconds', help: 'Start time of the process since the Unix epoch, in seconds.' }).set(startedSeconds);
  metrics.collectedGauge('process', { name: 'process_resident_memory_bytes', help: 'Resident memory size in bytes.', collect: (set) => set({}, process.memoryUsage.rss()) });
  metrics.collectedCounter('process', {
    name: 'process_cpu_seconds_total', help: 'User and system CPU time spent, in seconds.',
    collect: (set) => {
      const u = process.cpuUsage();
      set({}, (u.user + u.system) / 1e6);
    },
  });
}
