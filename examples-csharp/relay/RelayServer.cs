using System;
using System.Collections.Generic;
using Tickwire;

namespace TickwireExamples
{
    /// <summary>
    /// A relay server written like a Unity component: Start, Update once per frame,
    /// OnDestroy. Every client's input (sequenced channel) is forwarded to all the other
    /// clients, tagged with the sender's id; joins get a reliable welcome.
    ///
    /// This is the relay pattern built on today's transport API (TwHost). tickwire's
    /// relay and P2P session APIs (tick clock, jitter buffers, rollback requests) do not
    /// exist yet; when they do, this becomes a session in server mode.
    /// </summary>
    public sealed class RelayServer
    {
        public string BindAddress = "127.0.0.1:0";   // port 0: a free port; on a real network "0.0.0.0:7777", with its public address in the security settings
        public int MaxClients = 16;
        public byte[] ConnectKey;                     // the backend's key: only its connect-token holders get in

        private TwHost _host;
        private readonly List<uint> _clients = new List<uint>();
        // Preallocated: the per-frame path allocates nothing.
        private readonly byte[] _inbox = new byte[TwConstants.MaxUnreliableSize];
        private readonly byte[] _relay = new byte[TwConstants.MaxUnreliableSize];
        private readonly byte[] _welcome = new byte[8];

        public string Address { get; private set; }
        public long InputsRelayed { get; private set; }

        public void Start()
        {
            TwHostConfig config = TwHostConfig.Default();
            config.MaxClients = (uint)MaxClients;
            // Connect tokens name the address clients reach the server at: on a real network its
            // public IP and port, given as the public address; left empty, as here, the address
            // it is bound to (Address below).
            using (TwSecurity security = TwSecurity.ForRelayServer(ConnectKey, ""))
            {
                _host = new TwHost(config, BindAddress, security); // throws TickwireException on a bad address or a port in use
            }
            Address = _host.LocalAddress;
            Log.Info("relay: listening on " + Address);
        }

        public void Update()
        {
            TwEvent ev;
            while (_host.TryPollEvent(out ev))
            {
                switch (ev.Kind)
                {
                    case TwEventKind.Connected:
                        _clients.Add(ev.Peer);
                        Log.Info("relay: client " + ev.Peer + " joined from " + ev.Data.Connected.GetAddress());
                        Wire.WriteU32(_welcome, 0, ev.Peer);
                        Wire.WriteU32(_welcome, 4, (uint)_clients.Count);
                        _host.Send(ev.Peer, TwChannel.Reliable, _welcome);
                        break;
                    case TwEventKind.Disconnected:
                        _clients.Remove(ev.Peer);
                        Log.Info("relay: client " + ev.Peer + " left (" + ev.Data.Disconnected.Reason + ")");
                        break;
                    case TwEventKind.Message:
                        OnMessage(ev.Peer, ev.Data.Message.Channel);
                        break;
                    case TwEventKind.Fatal:
                        Log.Error("relay: network thread died: " + ev.Data.Fatal.GetMessage());
                        break;
                }
            }
            _host.Flush();
        }

        private void OnMessage(uint from, TwChannel channel)
        {
            int len;
            if (_host.ReadMessage(_inbox, out len) != TwResult.Ok || channel != TwChannel.Sequenced)
            {
                return;
            }
            // Relay: [sender id][input], on the same channel, to everyone else.
            if (len + 4 > _relay.Length)
            {
                return;
            }
            Wire.WriteU32(_relay, 0, from);
            Buffer.BlockCopy(_inbox, 0, _relay, 4, len);
            ReadOnlySpan<byte> relayed = new ReadOnlySpan<byte>(_relay, 0, len + 4);
            for (int i = 0; i < _clients.Count; i++)
            {
                if (_clients[i] != from)
                {
                    _host.Send(_clients[i], TwChannel.Sequenced, relayed); // QUEUE_FULL: dropped, as a lost datagram would be
                }
            }
            InputsRelayed++;
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
