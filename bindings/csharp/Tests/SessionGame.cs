// The engine side of the session tests: a small deterministic game driven by a
// TwSession exactly as a Unity game would drive it (TwSession's idiomatic calls only),
// with snapshots in engine-owned slots. Nothing on its frame path allocates: buffers
// are preallocated, failures are recorded as a code and a string literal, and events
// are counted by kind (and kept in a list only when RecordEvents is set).

using System;
using System.Collections.Generic;
using Tickwire;

namespace Tickwire.Tests
{
    internal sealed unsafe class SessionGame
    {
        public const int InputSize = 2;
        private const int Words = 8;
        /// <summary>Ticks of checksums kept (a ring): about 4.5 minutes at 60 Hz.</summary>
        public const int History = 1 << 14;

        public readonly int Players;
        public readonly long[] State;
        private readonly long[][] _slots;
        private readonly ulong[] _sums = new ulong[History];
        private readonly uint[] _sumTicks = new uint[History]; // tick + 1 of the sum stored; 0 = none

        private readonly byte[] _inputs = new byte[256 * InputSize];
        private readonly byte[] _statuses = new byte[256];
        private readonly byte[] _blob = new byte[4096];
        private readonly byte[] _input = new byte[InputSize];

        /// <summary>Injected nondeterminism: reads a counter outside the state.</summary>
        public bool Nondeterministic;
        private long _hidden;
        /// <summary>From this tick on, player 0's update differs (a real desync on one peer).</summary>
        public long DesyncFrom = -1;
        public uint Seed = 11;
        /// <summary>
        /// Record the checksum after every ADVANCE (as the state at the start of the next
        /// tick) instead of at SAVEs: a relay server saves only now and then.
        /// </summary>
        public bool RecordAfterAdvance;
        /// <summary>
        /// The session's confirmed tick as the last advance began: every tick before it has
        /// been (re)simulated with confirmed inputs. The confirmed tick read later may
        /// include inputs received since, whose corrections the next advance makes.
        /// </summary>
        public uint ConfirmedAtLastAdvance;
        /// <summary>A relay client's inputs pushed so far (its input clock).</summary>
        public uint Pushed;

        public long Advances;
        public long Resimulated;
        public long Predicted;
        public long Authoritative;
        public long FlagViolations;
        public long Saves;
        public long RestoredAt = -1;
        public int DumpsProvided;
        /// <summary>Inputs the ADVANCE requests marked TwInputStatus.Disconnected.</summary>
        public long DisconnectedInputs;
        /// <summary>The tick of the last ADVANCE, and the checksum of the state after it.</summary>
        public long LastAdvancedTick = -1;
        public ulong LastAdvancedSum;

        public readonly int[] EventCounts = new int[64];
        /// <summary>A relay client's latest Joined event (kept whether or not events are recorded).</summary>
        public TwSessionEventRelay LastJoined;
        public bool RecordEvents = true;
        public readonly List<TwSessionEvent> Events = new List<TwSessionEvent>();
        /// <summary>Session messages read (DrainEvents reads each one right after its event), the latest kept in MessageBuffer.</summary>
        public long MessagesRead;
        public readonly byte[] MessageBuffer = new byte[TwConstants.SessionMessageMaxSize];
        public int LastMessageLength;
        public uint LastMessagePlayer;

        /// <summary>P2P with a rendezvous: each remote player's path as its latest PathChanged event said (by player).</summary>
        public readonly TwPath[] Paths = new TwPath[256];
        /// <summary>The first and the latest PathChanged event, and how many came.</summary>
        public TwSessionEventPath FirstPath;
        public TwSessionEventPath LastPath;
        public int PathChanges;
        /// <summary>The latest RendezvousRefused event's reason (0: none came).</summary>
        public TwRendezvousRefusal LastRefusal;

        /// <summary>The first failure seen (a code and what failed), Ok if none.</summary>
        public TwResult Failure = TwResult.Ok;
        public string FailureWhat = "";

        public SessionGame(int players, int slots)
        {
            Players = players;
            State = new long[players * Words];
            for (int i = 0; i < State.Length; i++)
            {
                State[i] = i * 1000003L;
            }
            _slots = new long[Math.Max(slots, 1)][];
            for (int i = 0; i < _slots.Length; i++)
            {
                _slots[i] = new long[State.Length];
            }
        }

        public ulong Checksum()
        {
            ulong h = 0xcbf29ce484222325UL;
            for (int i = 0; i < State.Length; i++)
            {
                h = unchecked((h ^ (ulong)State[i]) * 0x100000001b3UL);
                h = (h << 29) | (h >> 35);
            }
            return h ^ (h >> 31);
        }

        /// <summary>The state as bytes (little-endian longs), for recordings and dumps.</summary>
        public byte[] Serialize()
        {
            byte[] bytes = new byte[State.Length * 8];
            fixed (long* s = State)
            {
                new ReadOnlySpan<byte>(s, bytes.Length).CopyTo(bytes);
            }
            return bytes;
        }

        /// <summary>The checksum saved for tick (the last SAVE of it), if any.</summary>
        public bool TryGetSum(uint tick, out ulong sum)
        {
            int i = (int)(tick % History);
            sum = _sums[i];
            return _sumTicks[i] == tick + 1;
        }

        private void Record(uint tick, ulong sum)
        {
            int i = (int)(tick % History);
            _sums[i] = sum;
            _sumTicks[i] = tick + 1;
        }

        /// <summary>Player p's input at tick t: changes every 4 ticks, from a hash.</summary>
        public static ushort InputFor(uint seed, uint player, uint tick)
        {
            ulong x = seed ^ unchecked(player * 0x9E3779B97F4A7C15UL) ^ unchecked((tick / 4) * 0xD1B54A32D192ED03UL);
            x ^= x >> 29;
            x = unchecked(x * 0xBF58476D1CE4E5B9UL);
            x ^= x >> 32;
            return (ushort)((x & 0x1f) | (((x >> 8) & 0x3) << 8));
        }

        private void Fail(string what, TwResult r)
        {
            if (Failure == TwResult.Ok)
            {
                Failure = r;
                FailureWhat = what;
            }
        }

        private void Step(uint tick, int players)
        {
            int n = State.Length;
            for (int p = 0; p < players; p++)
            {
                long v = _inputs[p * InputSize] | (_inputs[p * InputSize + 1] << 8);
                if (_statuses[p] == (byte)TwInputStatus.Disconnected)
                {
                    DisconnectedInputs++;
                    v = -1;
                }
                if (p == 0 && DesyncFrom >= 0 && tick >= DesyncFrom)
                {
                    v += 1;
                }
                for (int k = 0; k < Words; k++)
                {
                    int i = p * Words + k;
                    long next = State[(i + 1) % n];
                    State[i] = unchecked(State[i] * 31 + v * (k + 1)) ^ (next >> 7);
                }
            }
            if (Nondeterministic)
            {
                _hidden++;
                if (_hidden % 7 == 0)
                {
                    State[0] ^= _hidden;
                }
            }
        }

        /// <summary>Polls and runs every pending request of s.</summary>
        public void RunRequests(TwSession s)
        {
            TwRequest r;
            TwResult res;
            while ((res = s.PollRequest(out r)) == TwResult.Ok)
            {
                switch (r.Kind)
                {
                    case TwRequestKind.Save:
                    {
                        Array.Copy(State, _slots[r.Slot], State.Length);
                        ulong sum = Checksum();
                        if (!RecordAfterAdvance)
                        {
                            Record(r.Tick, sum);
                        }
                        Saves++;
                        TwResult c = s.ConfirmSave(r.Tick, sum);
                        if (c != TwResult.Ok)
                        {
                            Fail("ConfirmSave", c);
                        }
                        break;
                    }
                    case TwRequestKind.Load:
                        Array.Copy(_slots[r.Slot], State, State.Length);
                        break;
                    case TwRequestKind.Advance:
                    {
                        int players = (int)r.NumPlayers;
                        int n;
                        TwResult c = s.ReadInputs(_inputs, out n);
                        if (c != TwResult.Ok || n != players * InputSize || (ulong)n != r.DataLen || r.InputSize != InputSize)
                        {
                            Fail("ReadInputs", c == TwResult.Ok ? TwResult.InvalidState : c);
                            break;
                        }
                        c = s.ReadInputStatus(_statuses, out n);
                        if (c != TwResult.Ok || n != players)
                        {
                            Fail("ReadInputStatus", c == TwResult.Ok ? TwResult.InvalidState : c);
                            break;
                        }
                        bool anyPredicted = false;
                        for (int p = 0; p < players; p++)
                        {
                            anyPredicted |= _statuses[p] == (byte)TwInputStatus.Predicted;
                        }
                        // Rollback modes: predicted exactly when an input is, final exactly when none is.
                        if (anyPredicted != r.IsPredicted || anyPredicted == r.IsAuthoritative)
                        {
                            FlagViolations++;
                        }
                        Advances++;
                        Resimulated += r.IsResimulating ? 1 : 0;
                        Predicted += anyPredicted ? 1 : 0;
                        Authoritative += r.IsAuthoritative ? 1 : 0;
                        Step(r.Tick, players);
                        LastAdvancedTick = r.Tick;
                        LastAdvancedSum = Checksum();
                        if (RecordAfterAdvance)
                        {
                            Record(r.Tick + 1, LastAdvancedSum);
                        }
                        break;
                    }
                    case TwRequestKind.Restore:
                    {
                        int n;
                        TwResult c = s.ReadState(_blob, out n);
                        if (c != TwResult.Ok || (ulong)n != r.DataLen || n != State.Length * 8)
                        {
                            Fail("ReadState", c == TwResult.Ok ? TwResult.InvalidState : c);
                            break;
                        }
                        fixed (long* dst = State)
                        {
                            new ReadOnlySpan<byte>(_blob, 0, n).CopyTo(new Span<byte>(dst, n));
                        }
                        RestoredAt = r.Tick;
                        break;
                    }
                    case TwRequestKind.DumpState:
                    {
                        TwResult c;
                        fixed (long* src = _slots[r.Slot])
                        {
                            c = s.ProvideState(r.Tick, new ReadOnlySpan<byte>(src, State.Length * 8));
                        }
                        if (c != TwResult.Ok)
                        {
                            Fail("ProvideState", c);
                        }
                        DumpsProvided++;
                        break;
                    }
                    default:
                        Fail("unknown request kind", TwResult.InvalidState);
                        break;
                }
            }
            if (res != TwResult.Empty)
            {
                Fail("PollRequest", res);
            }
        }

        /// <summary>Pushes player's input for tick (from InputFor).</summary>
        public TwResult PushInput(TwSession s, uint player, uint tick)
        {
            ushort v = InputFor(Seed, player, tick);
            _input[0] = (byte)v;
            _input[1] = (byte)(v >> 8);
            return s.PushInput(player, _input);
        }

        /// <summary>Takes every pending event: counted by kind, and kept when RecordEvents.</summary>
        public void DrainEvents(TwSession s)
        {
            TwSessionEvent ev;
            while (s.TryPollEvent(out ev))
            {
                EventCounts[(int)ev.Kind & 63]++;
                if (ev.Kind == TwSessionEventKind.Joined)
                {
                    LastJoined = ev.Data.Relay;
                }
                if (ev.Kind == TwSessionEventKind.PathChanged)
                {
                    if (PathChanges == 0)
                    {
                        FirstPath = ev.Data.Path;
                    }
                    LastPath = ev.Data.Path;
                    Paths[ev.Data.Path.Player & 255] = ev.Data.Path.Path;
                    PathChanges++;
                }
                if (ev.Kind == TwSessionEventKind.RendezvousRefused)
                {
                    LastRefusal = ev.Data.Refusal.Reason;
                }
                if (ev.Kind == TwSessionEventKind.Message)
                {
                    int n;
                    TwResult r = s.ReadMessage(MessageBuffer, out n);
                    if (r != TwResult.Ok || n != (int)ev.Data.Message.Size)
                    {
                        Fail("ReadMessage", r == TwResult.Ok ? TwResult.InvalidState : r);
                    }
                    MessagesRead++;
                    LastMessageLength = n;
                    LastMessagePlayer = ev.Data.Message.Player;
                }
                if (RecordEvents)
                {
                    Events.Add(ev);
                }
            }
        }

        /// <summary>
        /// One engine frame of a networked session: the ticks due, each with the local
        /// player's input, an advance and its requests; then the events.
        /// </summary>
        public void Frame(TwSession s, uint local)
        {
            int due;
            TwResult r = s.TicksDue(out due);
            if (r != TwResult.Ok)
            {
                Fail("TicksDue", r);
                return;
            }
            for (int i = 0; i < due; i++)
            {
                TwSessionStats st;
                s.GetStats(out st);
                ConfirmedAtLastAdvance = st.ConfirmedTick;
                r = PushInput(s, local, st.CurrentTick + st.InputDelay);
                if (r != TwResult.Ok)
                {
                    Fail("PushInput", r);
                }
                r = s.Advance();
                if (r < 0)
                {
                    Fail("Advance", r);
                }
                RunRequests(s);
            }
            DrainEvents(s);
        }

        /// <summary>
        /// One engine frame of a relay node: the ticks due, each with (on a client) its next
        /// input as TwConstants.LocalPlayer (from InputFor with the client's index), an
        /// advance and its requests; then the events. A server pushes nothing.
        /// </summary>
        public void RelayFrame(TwSession s, uint clientIndex)
        {
            int due;
            TwResult r = s.TicksDue(out due);
            if (r != TwResult.Ok)
            {
                Fail("TicksDue", r);
                return;
            }
            bool client = s.Mode == TwSessionMode.RelayClient;
            for (int i = 0; i < due; i++)
            {
                if (client)
                {
                    ushort v = InputFor(Seed, clientIndex, Pushed++);
                    _input[0] = (byte)v;
                    _input[1] = (byte)(v >> 8);
                    r = s.PushInput(TwConstants.LocalPlayer, _input);
                    if (r != TwResult.Ok)
                    {
                        Fail("PushInput", r);
                    }
                }
                r = s.Advance(); // a client answers NotSynchronized until it has joined
                if (r < 0)
                {
                    Fail("Advance", r);
                }
                RunRequests(s);
            }
            DrainEvents(s);
        }

        /// <summary>One SYNCTEST tick: every player's input, an advance, its requests, the events.</summary>
        public void SyncTestTick(TwSession s, uint tick)
        {
            for (uint p = 0; p < Players; p++)
            {
                TwResult r = PushInput(s, p, tick);
                if (r != TwResult.Ok)
                {
                    Fail("PushInput", r);
                }
            }
            TwResult a = s.Advance();
            if (a != TwResult.Ok)
            {
                Fail("Advance", a);
            }
            RunRequests(s);
            DrainEvents(s);
        }

        public int Count(TwSessionEventKind kind)
        {
            return EventCounts[(int)kind];
        }

        public bool Find(TwSessionEventKind kind, out TwSessionEvent ev)
        {
            for (int i = 0; i < Events.Count; i++)
            {
                if (Events[i].Kind == kind)
                {
                    ev = Events[i];
                    return true;
                }
            }
            ev = default(TwSessionEvent);
            return false;
        }
    }
}
