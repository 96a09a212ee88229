/**
 * A listener that could not bind, with the setting that chose its address, so the message can say which
 * setting to change ("http.addr 127.0.0.1:9318 is in use") instead of a bare EADDRINUSE.
 */
export class ListenError extends Error {
  override name = 'ListenError';
  /** Why: another process holds the port, binding needs privileges, or something else (the cause says). */
  readonly reason: 'in-use' | 'denied' | 'other';
  /** The setting's key, e.g. `http.addr`. */
  readonly setting: string;
  readonly addr: string;

  constructor(setting: string, addr: string, cause: unknown) {
    const e = cause as { code?: string; message?: string };
    const text = `${e?.code ?? ''} ${e?.message ?? String(cause)}`;
    const reason = /EADDRINUSE/.test(text) ? 'in-use' : /EACCES|EPERM/.test(text) ? 'denied' : 'other';
    super(reason === 'in-use' ? `${setting} ${addr} is in use` : reason === 'denied' ? `${setting} ${addr}: not allowed to listen there` : `${setting} ${addr}: cannot listen (${e?.message ?? String(cause)})`);
    this.reason = reason;
    this.setting = setting;
    this.addr = addr;
    this.cause = cause;
  }
}

/** Runs a listener's start; a failure to bind comes back as a ListenError naming `setting`. */
export async function listenFor<T>(setting: string, addr: string, start: () => Promise<T>): Promise<T> {
  try {
    return await start();
  } catch (err) {
    throw new ListenError(setting, addr, err);
  }
}
