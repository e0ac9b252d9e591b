// No faults: four processes, four workers each, on two hot resources. The
// baseline, and where the cheapest mutants show.
export default {
  name: 'contention',
  title: '0 contention, no faults',
  expected: 0,
  config: { pOverrun: 0.01 },
};
