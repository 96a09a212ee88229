/** OTLP/JSON log requests shaped like Claude Code 2.1.332's (string values, its scope and body), for tests. */

export interface HookExecution {
  hookEvent: string;
  hookName: string;
  timeMs: number;
  userId?: string;
  sessionId?: string;
  version?: string;
  team?: string;
  /** Commands run (1 when omitted); null: num_hooks not sent. */
  numHooks?: number | null;
  /**
   * Omit for a client older than 2.1.280 (no size attributes); `persisted` omitted, a client that reports sizes
   * without num_outputs_persisted.
   */
  sizes?: { stdout: number; additionalContext: number; systemMessage?: number; persisted?: number };
}

const str = (key: string, value: string): { key: string; value: { stringValue: string } } => ({ key, value: { stringValue: value } });

/** One resource, one scope, a hook_execution_complete record per execution. */
export function hookRequest(executions: HookExecution[], seq = { n: 0 }): string {
  const first = executions[0];
  const version = first?.version ?? '2.1.332';
  return JSON.stringify({
    resourceLogs: [{
      resource: { attributes: [str('host.arch', 'amd64'), str('os.type', 'linux'), str('service.name', 'claude-code'), str('service.version', version), ...(first?.team ? [str('team', first.team)] : [])] },
      scopeLogs: [{
        scope: { name: 'com.anthropic.claude_code.events', version },
        logRecords: executions.map((e) => {
          const n = e.numHooks ?? 1;
          const attrs = [
            str('user.id', e.userId ?? 'user-a'), str('session.id', e.sessionId ?? 'session-1'), str('terminal.type', 'xterm'),
            str('event.name', 'hook_execution_complete'), str('event.timestamp', new Date(e.timeMs).toISOString()),
            { key: 'event.sequence', value: { intValue: seq.n++ } },
            str('hook_event', e.hookEvent), str('hook_name', e.hookName), ...(e.numHooks === null ? [] : [str('num_hooks', String(n))]), str('num_success', String(n)),
            str('num_blocking', '0'), str('num_non_blocking_error', '0'), str('num_cancelled', '0'), str('total_duration_ms', '12'),
            ...(e.team ? [str('team', e.team)] : []),
            ...(e.sizes ? [
              str('stdout_chars', String(e.sizes.stdout)), str('additional_context_chars', String(e.sizes.additionalContext)),
              str('system_message_chars', String(e.sizes.systemMessage ?? 0)), str('initial_user_message_chars', '0'),
              ...(e.sizes.persisted === undefined ? [] : [str('num_outputs_persisted', String(e.sizes.persisted))]),
            ] : []),
          ];
          const nanos = `${BigInt(e.timeMs) * 1_000_000n}`;
          return { timeUnixNano: nanos, observedTimeUnixNano: nanos, body: { stringValue: 'claude_code.hook_execution_complete' }, attributes: attrs };
        }),
      }],
    }],
  });
}
