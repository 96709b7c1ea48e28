/*
 * A line for the person running the tests (a skip's reason, a figure worth seeing), on stderr: stdout is the
 * reporter's alone, so that a machine-readable reporter (--reporter json) gives clean output.
 */
export function note(text: string): void {
  process.stderr.write(`      ${text}\n`);
}
