using System;

namespace TickwireExamples
{
    /// <summary>
    /// The whole game state of the relay example: up to MaxPlayers boxes on a wrapping
    /// grid, moved by 2-byte inputs; boxes that meet both score. A plain struct with
    /// fixed-size buffers, so a snapshot is a copy, a serialized state is its bytes, and
    /// nothing here allocates. The simulation is integer-only, hence deterministic on
    /// every machine.
    /// </summary>
    public unsafe struct Boxes
    {
        public const int MaxPlayers = 8;
        public const int InputSize = 2;
        public const int Width = 32;
        public const int Height = 24;

        public fixed int Present[MaxPlayers];
        public fixed int X[MaxPlayers];
        public fixed int Y[MaxPlayers];
        public fixed int Score[MaxPlayers];

        /// <summary>The serialized size: the struct's own bytes (every target is little-endian).</summary>
        public static int Size
        {
            get { return sizeof(Boxes); }
        }

        /// <summary>
        /// One tick. inputs: InputSize bytes per player, player 0 first: dx + 1 and dy + 1
        /// (each 0..2). statuses: one TwInputStatus byte per player; a Disconnected player
        /// has no box, and one that appears gets a box at its spawn cell.
        /// </summary>
        public void Step(ReadOnlySpan<byte> inputs, ReadOnlySpan<byte> statuses)
        {
            int players = Math.Min(statuses.Length, MaxPlayers);
            fixed (Boxes* s = &this)
            {
                for (int p = 0; p < players; p++)
                {
                    if (statuses[p] == (byte)Tickwire.TwInputStatus.Disconnected)
                    {
                        s->Present[p] = 0;
                        continue;
                    }
                    if (s->Present[p] == 0)
                    {
                        s->Present[p] = 1;
                        s->X[p] = p * 7 % Width;
                        s->Y[p] = p * 5 % Height;
                    }
                    s->X[p] = Wrap(s->X[p] + inputs[p * InputSize] % 3 - 1, Width);
                    s->Y[p] = Wrap(s->Y[p] + inputs[p * InputSize + 1] % 3 - 1, Height);
                }
                for (int a = 0; a < players; a++)
                {
                    for (int b = a + 1; b < players; b++)
                    {
                        if (s->Present[a] != 0 && s->Present[b] != 0 && s->X[a] == s->X[b] && s->Y[a] == s->Y[b])
                        {
                            s->Score[a]++;
                            s->Score[b]++;
                        }
                    }
                }
            }
        }

        private static int Wrap(int v, int m)
        {
            return (v % m + m) % m;
        }

        /// <summary>FNV-1a over the state's bytes: the checksum the server and its clients compare.</summary>
        public ulong Checksum()
        {
            ulong h = 14695981039346656037UL;
            fixed (Boxes* s = &this)
            {
                byte* b = (byte*)s;
                for (int i = 0; i < sizeof(Boxes); i++)
                {
                    h = unchecked((h ^ b[i]) * 1099511628211UL);
                }
            }
            return h;
        }

        /// <summary>The state's bytes, for a DUMP_STATE answer (valid while the struct is pinned by the caller).</summary>
        public static ReadOnlySpan<byte> Bytes(Boxes* state)
        {
            return new ReadOnlySpan<byte>(state, sizeof(Boxes));
        }

        /// <summary>The state's bytes as a writable span, for a RESTORE request to copy into.</summary>
        public static Span<byte> WritableBytes(Boxes* state)
        {
            return new Span<byte>(state, sizeof(Boxes));
        }

        public int ScoreOf(int player)
        {
            fixed (Boxes* s = &this)
            {
                return s->Score[player];
            }
        }

        public bool IsPresent(int player)
        {
            fixed (Boxes* s = &this)
            {
                return s->Present[player] != 0;
            }
        }
    }
}
