// The far end of the end-to-end benchmark: copies stdin to stdout, byte for byte.
process.stdin.pipe(process.stdout);
