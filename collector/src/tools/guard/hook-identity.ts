import { matcherQuery } from '../check/hook-input.ts';

/** Which hook fired, from the input JSON Claude Code wrote to the hook's stdin; telemetry names it the same way. */
export interface HookIdentity {
  hookEvent: string;
  /** `SessionStart:startup`, `PreToolUse:Bash`, or the event alone when there is no matcher query. */
  hookName: string;
  sessionId: string | undefined;
}

/** The hook named by `input`; "unknown" when the input is not Claude Code's hook JSON (a manual run). */
export function hookIdentity(input: string): HookIdentity {
  let parsed: unknown;
  try {
    parsed = JSON.parse(input);
  } catch {
    parsed = undefined;
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return { hookEvent: 'unknown', hookName: 'unknown', sessionId: undefined };
  const fields = parsed as Record<string, unknown>;
  const hookEvent = typeof fields.hook_event_name === 'string' && fields.hook_event_name !== '' ? fields.hook_event_name : 'unknown';
  const query = matcherQuery(fields);
  return {
    hookEvent,
    hookName: query === undefined || query === '' ? hookEvent : `${hookEvent}:${query}`,
    sessionId: typeof fields.session_id === 'string' ? fields.session_id : undefined,
  };
}
