using System;
using System.Collections.Generic;
using Tickwire;

namespace TickwireExamples
{
    /// <summary>
    /// A relay client written like a Unity component. Each frame it sends its input
    /// (frame number and a stick position) on the sequenced channel, flushes, and
    /// drains events: the welcome, and the other players' inputs relayed by the server.
    /// </summary>
    public sealed class RelayClient
    {
        public string Name = "player";
        public string ServerAddress;
        public byte[] ConnectToken;  // from the backend (over HTTPS in a game): lets this client into the server
        public int LatencyMs; // optional simulated latency (link simulator), both ways

        private TwHost _host;
        private uint _server;
        private uint _frame;
        private readonly byte[] _input = new byte[12];
        private readonly byte[] _inbox = new byte[TwConstants.MaxUnreliableSize];
        private readonly Dictionary<uint, uint> _lastFrameOf = new Dictionary<uint, uint>();

        public bool Connected { get; private set; }
        public uint MyId { get; private set; }
        public long InputsFromOthers { get; private set; }

        public int PlayersHeard
        {
            get { return _lastFrameOf.Count; }
        }

        public void Start()
        {
            using (TwSecurity security = TwSecurity.ForRelayClient(ConnectToken))
            {
                _host = new TwHost(TwHostConfig.Default(), "127.0.0.1:0", security);
            }
            if (LatencyMs > 0)
            {
                TwLinkSimConfig sim = TwLinkSimConfig.Default();
                sim.LatencyUs = (ulong)LatencyMs * 1000;
                sim.JitterKind = TwJitterKind.Uniform;
                sim.JitterUs = LatencyMs * 100.0; // +0..10%
                _host.SetLinkSim(TwDirection.Outbound, sim);
                _host.SetLinkSim(TwDirection.Inbound, sim);
            }
            _server = _host.Connect(ServerAddress); // does not block; CONNECTED follows
        }

        public void Update()
        {
            if (Connected)
            {
                _frame++;
                float stick = (float)Math.Sin(_frame * 0.1);
                Wire.WriteU32(_input, 0, _frame);
                Wire.WriteU32(_input, 4, (uint)BitConverter.SingleToInt32Bits(stick));
                Wire.WriteU32(_input, 8, MyId);
                _host.Send(_server, TwChannel.Sequenced, _input);
            }
            _host.Flush();

            TwEvent ev;
            while (_host.TryPollEvent(out ev))
            {
                switch (ev.Kind)
                {
                    case TwEventKind.Connected:
                        Connected = true;
                        break;
                    case TwEventKind.Message:
                        OnMessage(ev.Data.Message.Channel);
                        break;
                    case TwEventKind.Disconnected:
                        Connected = false;
                        Log.Info(Name + ": disconnected (" + ev.Data.Disconnected.Reason + ")");
                        break;
                    case TwEventKind.Fatal:
                        Log.Error(Name + ": network thread died: " + ev.Data.Fatal.GetMessage());
                        break;
                }
            }
        }

        private void OnMessage(TwChannel channel)
        {
            int len;
            if (_host.ReadMessage(_inbox, out len) != TwResult.Ok)
            {
                return;
            }
            if (channel == TwChannel.Reliable && len == 8)
            {
                MyId = Wire.ReadU32(_inbox, 0);
                Log.Info(Name + ": welcome, I am client " + MyId + " of " + Wire.ReadU32(_inbox, 4));
            }
            else if (channel == TwChannel.Sequenced && len == 16)
            {
                uint sender = Wire.ReadU32(_inbox, 0);
                _lastFrameOf[sender] = Wire.ReadU32(_inbox, 4);
                InputsFromOthers++;
            }
        }

        public void Report()
        {
            TwPeerStats ps;
            if (_host.GetPeerStats(_server, out ps) == TwResult.Ok)
            {
                Log.Info(Name + ": " + InputsFromOthers + " inputs from " + PlayersHeard + " other players, rtt " +
                         (ps.SrttUs / 1000).ToString("0.0") + " ms, loss " + ps.Loss.ToString("0.000") + ", " +
                         ps.PacketsSent + " packets out / " + ps.PacketsReceived + " in");
            }
        }

        public void OnDestroy()
        {
            if (_host != null)
            {
                _host.Dispose();
            }
        }
    }
}
