/**
 * A mail server on 127.0.0.1 that accepts every message and throws it away, so delivery speed is
 * the service's, not a mailbox's. Its own process, so it never shares an event loop with the load
 * generator. What was delivered is read from the service's outbox counts; the sink logs the size
 * of every message it accepts, and its own count when stopped, as a cross-check.
 *   node --import tsx bench/smtp-sink.ts PORT
 */
import { SMTPServer } from 'smtp-server';

const port = Number(process.argv[2]);
if (!port) {
  process.stderr.write('usage: smtp-sink.ts PORT\n');
  process.exit(2);
}

let accepted = 0;
const server = new SMTPServer({
  authOptional: true,
  disabledCommands: ['STARTTLS'],
  logger: false,
  banner: 'shiplog bench sink',
  size: 10 * 1024 * 1024,
  onData(stream, _session, callback) {
    let bytes = 0;
    stream.on('data', (chunk: Buffer) => (bytes += chunk.length));
    stream.on('error', () => undefined);
    stream.on('end', () => {
      accepted += 1;
      // Its log is how the benchmark learns what the messages weigh.
      process.stdout.write(`message ${bytes}\n`);
      callback(null);
    });
  },
});
server.on('error', () => {
  // A client that drops its connection mid-session is not the sink's problem.
});

const shutdown = () => {
  process.stdout.write(`accepted ${accepted}\n`);
  server.close(() => process.exit(0));
  setTimeout(() => process.exit(0), 2000).unref();
};
process.once('SIGTERM', shutdown);
process.once('SIGINT', shutdown);

server.listen(port, '127.0.0.1', () => process.stdout.write(`listening ${port}\n`));
