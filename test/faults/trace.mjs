// FAULTS_TRACE=1: a client also forwards the library's diagnostics-channel
// events (attempts with every node's vote, keys given on release, in-process
// handovers, lost locks, waits) to the runner, which keeps them in the
// FAULTS_DUMP history. `valueHash` in them matches an operation's `vh`.
import dc from 'node:diagnostics_channel';

const CHANNELS = ['attempt', 'woken', 'handover', 'lost', 'wait', 'not-acquired'];

export function startTrace(send, now) {
  for (const ch of CHANNELS)
    dc.channel(`nestjs-redlock:${ch}`).subscribe((m) => {
      const { error, ...rest } = m;
      send({ k: 'trace', ch, t: now(), m: JSON.parse(JSON.stringify(rest)) });
    });
}
