// Exits at once with a message on stderr, as a server with a missing setting does.
process.stderr.write('starting crash-server\n');
process.stderr.write('fatal: DEMO_API_KEY is not set\n');
process.exit(3);
