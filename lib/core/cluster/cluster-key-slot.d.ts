// The package ships no types; this is the one function the library uses.
declare module 'cluster-key-slot' {
  /** The Redis Cluster hash slot (0-16383) of a key. */
  function calculateSlot(key: string | Buffer): number;
  export default calculateSlot;
}
