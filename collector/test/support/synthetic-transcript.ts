import { once } from 'node:events';
import { createWriteStream } from 'node:fs';

/**
 * Transcript records in the shape Claude Code writes them (`~/.claude/projects/<project>/<session>.jsonl`),
 * for tests and for the large-file benchmark. Only the fields hookwatch reads, plus enough of the rest to look real.
 */

/** The marker Claude Code puts where a hook output was saved to a file instead of delivered. */
export function persistedMarker(options: { savedPath: string; sizeLabel?: string; preview: string }): string {
  return (
    '<persisted-output>\n' +
    `Output too large (${options.sizeLabel ?? '17.7KB'}). Full output saved to: ${options.savedPath}\n\n` +
    'Preview (first 2KB):\n' +
    `${options.preview}\n` +
    '</persisted-output>'
  );
}

/** Options of a hook attachment record. */
export interface HookRecordOptions {
  uuid: string;
  sessionId: string;
  hookName: string;
  hookEvent?: string;
  type?: string;
  content?: string | string[];
  stdout?: string;
  timestamp?: string;
}

/** An `"type":"attachment"` record holding a hook result. */
export function hookRecord(options: HookRecordOptions): Record<string, unknown> {
  const hookEvent = options.hookEvent ?? options.hookName.split(':')[0];
  const attachment: Record<string, unknown> = {
    type: options.type ?? 'hook_success',
    hookName: options.hookName,
    toolUseID: `toolu_${options.uuid.slice(0, 8)}`,
    hookEvent,
    content: options.content ?? options.stdout ?? '',
    ...(options.stdout === undefined ? {} : { stdout: options.stdout }),
    stderr: '',
    exitCode: 0,
    command: `"$CLAUDE_PROJECT_DIR"/.claude/hooks/${hookEvent}.sh`,
    durationMs: 42,
  };
  return {
    parentUuid: null,
    isSidechain: false,
    attachment,
    type: 'attachment',
    uuid: options.uuid,
    timestamp: options.timestamp ?? '2026-11-30T08:00:00.000Z',
    cwd: '/home/dev/project',
    sessionId: options.sessionId,
    version: '2.1.332',
  };
}

/** A user or assistant message record. */
export function messageRecord(options: { uuid: string; sessionId: string; role: 'user' | 'assistant'; text: string }): Record<string, unknown> {
  return {
    parentUuid: null,
    isSidechain: false,
    type: options.role,
    message: { role: options.role, content: [{ type: 'text', text: options.text }] },
    uuid: options.uuid,
    timestamp: '2026-11-30T08:00:01.000Z',
    cwd: '/home/dev/project',
    sessionId: options.sessionId,
  };
}

/** What a generated large transcript holds, to compare a scan against. */
export interface LargeTranscriptFacts {
  bytes: number;
  lines: number;
  /** Unique hook records. */
  hookRecords: number;
  persistedRecords: number;
  duplicateRecords: number;
  unparsableLines: number;
  oversizedLines: number;
  sessions: number;
}

/** Options of writeLargeTranscript. */
export interface LargeTranscriptOptions {
  targetBytes: number;
  /** Add one line of this many bytes (e.g. over the 64 MiB line limit) in the middle. */
  hugeLineBytes?: number;
  /** Blocks per session before the next session starts. */
  blocksPerSession?: number;
}

function uuidFor(n: number, kind: number): string {
  const hex = n.toString(16).padStart(12, '0');
  return `${kind.toString(16).padStart(8, '0')}-0000-4000-8000-${hex}`;
}

/**
 * Streams a transcript of about `targetBytes` to `path`: long assistant and user messages with hook records
 * between them, every 10th hook output persisted, every 50th record written twice, an unparsable line every
 * 1,000 blocks, an optional huge line, and a last line cut off mid-record.
 */
export async function writeLargeTranscript(path: string, options: LargeTranscriptOptions): Promise<LargeTranscriptFacts> {
  const out = createWriteStream(path, { highWaterMark: 1024 * 1024 });
  const facts: LargeTranscriptFacts = { bytes: 0, lines: 0, hookRecords: 0, persistedRecords: 0, duplicateRecords: 0, unparsableLines: 0, oversizedLines: 0, sessions: 0 };
  const blocksPerSession = options.blocksPerSession ?? 2_000;
  const assistantText = 'The build failed because the lockfile is stale; regenerate it and rerun the tests. '.repeat(160);
  const userText = 'npm ERR! code ERESOLVE\nnpm ERR! ERESOLVE unable to resolve dependency tree\n'.repeat(110);
  const write = async (line: string): Promise<void> => {
    facts.bytes += Buffer.byteLength(line);
    facts.lines++;
    if (!out.write(line)) await once(out, 'drain');
  };

  let hugeWritten = options.hugeLineBytes === undefined;
  let previousPersisted: string | undefined;
  for (let block = 0; facts.bytes < options.targetBytes; block++) {
    const sessionNumber = Math.floor(block / blocksPerSession);
    if (block % blocksPerSession === 0) facts.sessions++;
    const sessionId = uuidFor(sessionNumber, 0x5e5);
    await write(`${JSON.stringify(messageRecord({ uuid: uuidFor(block, 1), sessionId, role: 'assistant', text: `${block} ${assistantText}` }))}\n`);
    await write(`${JSON.stringify(messageRecord({ uuid: uuidFor(block, 2), sessionId, role: 'user', text: `${block} ${userText}` }))}\n`);

    const persisted = block % 10 === 9;
    const hookUuid = uuidFor(block, 3);
    const output = persisted
      ? persistedMarker({ savedPath: `/home/dev/.claude/projects/p/${sessionId}/tool-results/hook-${hookUuid}-0.txt`, preview: 'C'.repeat(2000) })
      : 'P'.repeat(500 + (block % 9000));
    // Claude Code puts the marker in a persisted output's content; the stdout beside it is the raw output.
    const line = `${JSON.stringify(hookRecord({ uuid: hookUuid, sessionId, hookName: 'PostToolUse:Bash', ...(persisted ? { content: output } : { stdout: output }) }))}\n`;
    await write(line);
    facts.hookRecords++;
    if (persisted) {
      facts.persistedRecords++;
      previousPersisted = line;
    }
    if (block % 50 === 49 && previousPersisted !== undefined) {
      await write(previousPersisted);
      facts.duplicateRecords++;
    }
    if (block % 1000 === 999) {
      await write('{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"cut\n');
      facts.unparsableLines++;
    }
    if (!hugeWritten && options.hugeLineBytes !== undefined && facts.bytes >= options.targetBytes / 2) {
      hugeWritten = true;
      const filler = Buffer.alloc(1024 * 1024, 'h');
      const prefix = '{"type":"user","message":{"role":"user","content":"';
      let written = prefix.length;
      facts.bytes += prefix.length;
      if (!out.write(prefix)) await once(out, 'drain');
      while (written < options.hugeLineBytes) {
        written += filler.length;
        facts.bytes += filler.length;
        if (!out.write(filler)) await once(out, 'drain');
      }
      await write('"}}\n');
      facts.oversizedLines++;
    }
  }
  await write('{"parentUuid":null,"isSidechain":false,"attachment":{"type":"hook_success","hookName":"Stop","con');
  facts.unparsableLines++;
  out.end();
  await once(out, 'finish');
  return facts;
}
