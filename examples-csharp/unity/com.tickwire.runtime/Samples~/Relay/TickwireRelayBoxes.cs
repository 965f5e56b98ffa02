using System;
using Tickwire;

namespace Tickwire.Samples.Relay
{
    /// <summary>
    /// The relay samples' game state: up to MaxPlayers boxes on a wrapping grid, moved by
    /// 2-byte inputs (dx + 1, dy + 1); boxes that meet both score. A stand-in: put your
    /// game's state here as a plain struct (a snapshot is a copy, a serialized state is its
    /// bytes) and its deterministic step in Step. The server and every client run the same
    /// code, so their states stay equal.
    /// </summary>
    public unsafe struct TickwireRelayBoxes
    {
        public const int MaxPlayers = 8;
        public const int InputSize = 2;
        public const int Width = 32;
        public const int Height = 24;

        public fixed int Present[MaxPlayers];
        public fixed int X[MaxPlayers];
        public fixed int Y[MaxPlayers];
        public fixed int Score[MaxPlayers];

        /// <summary>One tick: InputSize bytes per player, and one TwInputStatus byte per player.</summary>
        public void Step(ReadOnlySpan<byte> inputs, ReadOnlySpan<byte> statuses)
        {
            int players = Math.Min(statuses.Length, MaxPlayers);
            fixed (TickwireRelayBoxes* s = &this)
            {
                for (int p = 0; p < players; p++)
                {
                    if (statuses[p] == (byte)TwInputStatus.Disconnected)
                    {
                        s->Present[p] = 0; // gone (or not there yet)
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

        /// <summary>FNV-1a over the state's bytes: what the server and its clients compare.</summary>
        public ulong Checksum()
        {
            ulong h = 14695981039346656037UL;
            fixed (TickwireRelayBoxes* s = &this)
            {
                byte* b = (byte*)s;
                for (int i = 0; i < sizeof(TickwireRelayBoxes); i++)
                {
                    h = unchecked((h ^ b[i]) * 1099511628211UL);
                }
            }
            return h;
        }

        public int ScoreOf(int player)
        {
            fixed (TickwireRelayBoxes* s = &this)
            {
                return s->Score[player];
            }
        }
    }
}
