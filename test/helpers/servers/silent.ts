// Reads its input and never answers.
process.stdin.resume();
setInterval(() => undefined, 1000);
