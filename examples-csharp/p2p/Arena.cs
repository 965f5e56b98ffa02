namespace TickwireExamples
{
    /// <summary>
    /// The whole game state of a tiny two-player arena: positions, velocities and
    /// scores. A plain struct, so a snapshot is a copy and nothing here allocates. The
    /// simulation is integer-only, hence deterministic on every machine.
    /// </summary>
    public struct Arena
    {
        public const int Players = 2;
        public const int Size = 16; // the arena is Size x Size cells; it wraps around
        public const int SerializedSize = Players * 5 * 4;

        public int X0, Y0, Vx0, Vy0, Score0;
        public int X1, Y1, Vx1, Vy1, Score1;

        public static Arena Initial()
        {
            Arena a = default(Arena);
            a.X0 = 4;
            a.Y0 = 4;
            a.X1 = Size - 4;
            a.Y1 = Size - 4;
            return a;
        }

        /// <summary>
        /// One tick. Inputs are one byte per player, player 0 first: bits 0-3 are
        /// left, right, up, down (accelerate), bit 4 brakes.
        /// </summary>
        public void Step(byte input0, byte input1)
        {
            Move(ref X0, ref Y0, ref Vx0, ref Vy0, input0);
            Move(ref X1, ref Y1, ref Vx1, ref Vy1, input1);
            if (X0 == X1 && Y0 == Y1)
            {
                // A collision scores for whoever is faster, and bounces both.
                int s0 = Vx0 * Vx0 + Vy0 * Vy0;
                int s1 = Vx1 * Vx1 + Vy1 * Vy1;
                if (s0 > s1)
                {
                    Score0++;
                }
                else if (s1 > s0)
                {
                    Score1++;
                }
                Vx0 = -Vx0;
                Vy0 = -Vy0;
                Vx1 = -Vx1;
                Vy1 = -Vy1;
            }
        }

        private static void Move(ref int x, ref int y, ref int vx, ref int vy, byte input)
        {
            vx += ((input >> 1) & 1) - (input & 1);
            vy += ((input >> 3) & 1) - ((input >> 2) & 1);
            if ((input & 16) != 0)
            {
                vx /= 2;
                vy /= 2;
            }
            vx = Clamp(vx, -3, 3);
            vy = Clamp(vy, -3, 3);
            x = ((x + vx) % Size + Size) % Size;
            y = ((y + vy) % Size + Size) % Size;
        }

        private static int Clamp(int v, int lo, int hi)
        {
            return v < lo ? lo : (v > hi ? hi : v);
        }

        /// <summary>FNV-1a over the fields: the checksum the session compares between peers.</summary>
        public ulong Checksum()
        {
            ulong h = 14695981039346656037UL;
            h = Mix(h, X0, Y0, Vx0, Vy0, Score0);
            return Mix(h, X1, Y1, Vx1, Vy1, Score1);
        }

        private static ulong Mix(ulong h, int a, int b, int c, int d, int e)
        {
            h = unchecked((h ^ (uint)a) * 1099511628211UL);
            h = unchecked((h ^ (uint)b) * 1099511628211UL);
            h = unchecked((h ^ (uint)c) * 1099511628211UL);
            h = unchecked((h ^ (uint)d) * 1099511628211UL);
            return unchecked((h ^ (uint)e) * 1099511628211UL);
        }

        /// <summary>Writes the state into buffer (SerializedSize bytes, little-endian).</summary>
        public void Serialize(byte[] buffer)
        {
            int i = 0;
            Put(buffer, ref i, X0, Y0, Vx0, Vy0, Score0);
            Put(buffer, ref i, X1, Y1, Vx1, Vy1, Score1);
        }

        /// <summary>Reads a state written by Serialize.</summary>
        public static Arena Deserialize(byte[] buffer)
        {
            Arena a = default(Arena);
            int i = 0;
            a.X0 = Get(buffer, ref i);
            a.Y0 = Get(buffer, ref i);
            a.Vx0 = Get(buffer, ref i);
            a.Vy0 = Get(buffer, ref i);
            a.Score0 = Get(buffer, ref i);
            a.X1 = Get(buffer, ref i);
            a.Y1 = Get(buffer, ref i);
            a.Vx1 = Get(buffer, ref i);
            a.Vy1 = Get(buffer, ref i);
            a.Score1 = Get(buffer, ref i);
            return a;
        }

        private static void Put(byte[] b, ref int i, int v0, int v1, int v2, int v3, int v4)
        {
            Put(b, ref i, v0);
            Put(b, ref i, v1);
            Put(b, ref i, v2);
            Put(b, ref i, v3);
            Put(b, ref i, v4);
        }

        private static void Put(byte[] b, ref int i, int v)
        {
            b[i] = (byte)v;
            b[i + 1] = (byte)(v >> 8);
            b[i + 2] = (byte)(v >> 16);
            b[i + 3] = (byte)(v >> 24);
            i += 4;
        }

        private static int Get(byte[] b, ref int i)
        {
            int v = b[i] | b[i + 1] << 8 | b[i + 2] << 16 | b[i + 3] << 24;
            i += 4;
            return v;
        }

        public override string ToString()
        {
            return "(" + X0 + "," + Y0 + ") score " + Score0 + " vs (" + X1 + "," + Y1 + ") score " + Score1;
        }
    }
}
