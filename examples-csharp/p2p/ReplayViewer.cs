using System;
using Tickwire;

namespace TickwireExamples
{
    /// <summary>
    /// Plays a recorded match back (a kill-cam, a match review): a REPLAY session hands
    /// back the recorded start state as a RESTORE request and every tick's inputs as
    /// ADVANCE requests. In a game, Update would advance TicksDue ticks per frame; this
    /// one fast-forwards to the end.
    /// </summary>
    public sealed class ReplayViewer
    {
        private TwSession _session;
        private Arena _arena; // all zeros until the RESTORE
        private readonly byte[] _inputs = new byte[Arena.Players];
        private readonly byte[] _state = new byte[Arena.SerializedSize];

        public Arena State
        {
            get { return _arena; }
        }

        public uint Tick { get; private set; }
        public bool Restored { get; private set; }

        public void Start(byte[] replay)
        {
            TwSessionConfig config = TwSessionConfig.Default(TwSessionMode.Replay);
            config.NumPlayers = Arena.Players; // the replay's shape must match
            config.InputSize = 1;
            _session = new TwSession(config);
            _session.LoadReplay(replay);
            _session.Start();
        }

        /// <summary>Advances until the replay has ended; returns the number of ticks played.</summary>
        public int PlayToEnd()
        {
            int played = 0;
            while (true)
            {
                TwResult r = _session.Advance();
                if (r < 0)
                {
                    throw new TickwireException(r, TwLibrary.LastErrorMessage());
                }
                TwRequest q;
                while (_session.TryPollRequest(out q))
                {
                    if (q.Kind == TwRequestKind.Restore)
                    {
                        int n;
                        _session.ReadState(_state, out n);
                        _arena = Arena.Deserialize(_state);
                        Restored = true;
                    }
                    else if (q.Kind == TwRequestKind.Advance)
                    {
                        _session.ReadInputs(_inputs);
                        _arena.Step(_inputs[0], _inputs[1]);
                        played++;
                    }
                }
                if (r == TwResult.Finished)
                {
                    TwSessionStats s;
                    _session.GetStats(out s);
                    Tick = s.CurrentTick;
                    return played;
                }
            }
        }

        public void OnDestroy()
        {
            if (_session != null)
            {
                _session.Dispose();
            }
        }
    }
}
