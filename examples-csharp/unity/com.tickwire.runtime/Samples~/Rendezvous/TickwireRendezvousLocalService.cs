using System;
using Tickwire;
using UnityEngine;

namespace Tickwire.Samples.Rendezvous
{
    /// <summary>
    /// For trying the sample in one editor: stands in for two things a game keeps off the
    /// players' machines, the rendezvous service (a TwRendezvous on Bind Address) and the
    /// backend that hands each player the match's secret and a ticket. TickwireRendezvousPlayer
    /// components whose Ticket is empty get theirs from it (Issue). In a game, run the
    /// rendezvous on a public address (the `tickwire rendezvous` program, or a TwRendezvous in
    /// a server of yours), mint tickets in your backend with TwRendezvous.GenerateTicket and
    /// the rendezvous's key, and drop this component.
    /// </summary>
    public sealed class TickwireRendezvousLocalService : MonoBehaviour
    {
        [SerializeField] private string bindAddress = "127.0.0.1:7780";
        [SerializeField] private ulong matchId = 1;

        private TwRendezvous _rendezvous;
        private byte[] _key;
        private byte[] _matchSecret;
        private uint _protocolId;

        /// <summary>The service of the scene, once it started (Awake); null before and after.</summary>
        public static TickwireRendezvousLocalService Current { get; private set; }

        /// <summary>The rendezvous, for its figures (GetStats) and its address (LocalAddress).</summary>
        public TwRendezvous Rendezvous
        {
            get { return _rendezvous; }
        }

        private void Awake()
        {
            try
            {
                // The sessions' protocol id: tickets are minted for it, the service checks it.
                _protocolId = TwSessionConfig.Default(TwSessionMode.P2P).Host.ProtocolId;
                _key = TwSecurity.GenerateKey();         // the rendezvous's key: tickets are minted with it
                _matchSecret = TwSecurity.GenerateKey(); // the players' secret of the one match here
                _rendezvous = new TwRendezvous(bindAddress, _key, _protocolId);
                Current = this;
                Debug.Log("tickwire: a rendezvous on " + _rendezvous.LocalAddress + " (the sample's stand-in)");
            }
            catch (TickwireException e)
            {
                Debug.LogError("tickwire: " + e.Message);
                enabled = false;
            }
        }

        /// <summary>
        /// What the backend hands player slot of the match (players in all): the rendezvous's
        /// address, a ticket for the slot, and a copy of the match's secret.
        /// </summary>
        public void Issue(uint slot, uint players, out string address, out byte[] ticket, out byte[] matchSecret)
        {
            if (_rendezvous == null || _rendezvous.IsDisposed)
            {
                throw new InvalidOperationException("the rendezvous did not start");
            }
            address = _rendezvous.LocalAddress;
            ticket = TwRendezvous.GenerateTicket(_key, _protocolId, 1000 + (ulong)slot, address, matchId, slot, players, 3600);
            matchSecret = (byte[])_matchSecret.Clone();
        }

        private void OnDestroy()
        {
            if (Current == this)
            {
                Current = null;
            }
            if (_rendezvous != null)
            {
                _rendezvous.Dispose();
            }
            if (_key != null)
            {
                Array.Clear(_key, 0, _key.Length);
                Array.Clear(_matchSecret, 0, _matchSecret.Length);
            }
        }
    }
}
