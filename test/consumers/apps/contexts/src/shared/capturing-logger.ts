import type { LoggerService, LogLevel } from '@nestjs/common';

export interface CapturedLine {
  level: LogLevel;
  message: string;
  context?: string;
}

/**
 * A Nest logger that keeps what it is given (printing only error lines,
 * to stderr): a test asserts on the lines (`errors()` must stay empty for
 * lock conflicts).
 * Pass it to `app.useLogger()` or `createTestingModule(...).setLogger()`.
 */
export class CapturingLogger implements LoggerService {
  readonly lines: CapturedLine[] = [];

  log(message: unknown, ...rest: unknown[]) {
    this.push('log', message, rest);
  }
  error(message: unknown, ...rest: unknown[]) {
    this.push('error', message, rest);
  }
  warn(message: unknown, ...rest: unknown[]) {
    this.push('warn', message, rest);
  }
  debug(message: unknown, ...rest: unknown[]) {
    this.push('debug', message, rest);
  }
  verbose(message: unknown, ...rest: unknown[]) {
    this.push('verbose', message, rest);
  }
  fatal(message: unknown, ...rest: unknown[]) {
    this.push('fatal', message, rest);
  }

  /** Error-level lines (error and fatal). */
  errors(): CapturedLine[] {
    return this.lines.filter(
      (line) => line.level === 'error' || line.level === 'fatal',
    );
  }

  clear(): void {
    this.lines.length = 0;
  }

  private push(level: LogLevel, message: unknown, rest: unknown[]) {
    // Nest passes the context last; an error's stack may come before it.
    const context =
      rest.length && typeof rest[rest.length - 1] === 'string'
        ? (rest[rest.length - 1] as string)
        : undefined;
    const text = [message, ...rest.slice(0, context ? -1 : undefined)]
      .map((part) =>
        part instanceof Error
          ? `${part.name}: ${part.message}\n${part.stack ?? ''}`
          : typeof part === 'string'
            ? part
            : JSON.stringify(part),
      )
      .join('\n');
    this.lines.push({ level, message: text, context });
    // Errors are still shown (stderr, not console.error): a failing test
    // should say why.
    if (level === 'error' || level === 'fatal')
      process.stderr.write(
        `[${context ?? 'Nest'}] ${level.toUpperCase()} ${text}\n`,
      );
  }
}

/**
 * Records `console.error` calls (still printed) until `restore()`: what a
 * logger-less part of a framework would say about a failed call.
 */
export function captureConsoleError(): { calls: unknown[][]; restore(): void } {
  const original = console.error;
  const calls: unknown[][] = [];
  console.error = (...args: unknown[]) => {
    calls.push(args);
    original(...args);
  };
  return { calls, restore: () => void (console.error = original) };
}
