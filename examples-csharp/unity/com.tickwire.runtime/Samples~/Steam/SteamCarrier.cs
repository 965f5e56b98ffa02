// A tickwire session on Steam's networking (ISteamNetworkingMessages through
// Steamworks.NET) instead of UDP. Written against Steamworks.NET's published API and
// compile-checked (scripts/unity-package-check.sh) against stand-ins of the few types and
// members it uses (bindings/csharp/Tests/UnitySim/SteamworksStubs.cs); it has not been run
// against Steam. See README.md next to it.
//
// Compiled only when Steamworks.NET is there: its UPM package (com.rlabrecque.steamworks.net)
// sets TICKWIRE_STEAMWORKS through this sample's asmdef versionDefines; with the
// .unitypackage install, add TICKWIRE_STEAMWORKS to the Scripting Define Symbols. Where
// Steamworks.NET itself is off (DISABLESTEAMWORKS: platforms Steam does not run on) this
// file is empty too.
#if TICKWIRE_STEAMWORKS && !DISABLESTEAMWORKS
using System;
using System.Runtime.InteropServices;
using Steamworks;
using Tickwire;

namespace Tickwire.Samples.Steam
{
    /// <summary>
    /// Moves one <see cref="TwSession"/>'s datagrams over SteamNetworkingMessages (one
    /// channel, unreliable, no Nagle delay): not a MonoBehaviour, call it from yours.
    ///
    /// Setup: bind the session to this player's SteamID (<see cref="Bind"/> sets the bind
    /// address "remote:&lt;steamid64&gt;" and a largest datagram of 1200 bytes, Steam's
    /// unreliable message size), name every other player by <see cref="Address"/> (P2P:
    /// AddRemotePlayer; relay client: SetServer), create the carrier with the SteamIDs the
    /// match expects (the other players; a relay server: its clients), and Start.
    ///
    /// Each frame, on the main thread, with SteamAPI.RunCallbacks called by your Steam
    /// manager: <see cref="Receive"/> before the session loop (TicksDue, PushInput, Advance,
    /// requests, events), <see cref="Send"/> after it.
    ///
    /// Session requests (SteamNetworkingMessagesSessionRequest_t) are accepted only from
    /// the expected SteamIDs; messages from anyone else are released unread. Nothing in
    /// Receive or Send allocates: the message pointers, the datagram batches and the
    /// identities are made once (messages are read at the offsets of Steamworks.NET's own
    /// SteamNetworkingMessage_t layout, found once with Marshal.OffsetOf, instead of
    /// FromIntPtr, which boxes a copy with a new array per message).
    /// </summary>
    public sealed class SteamCarrier : IDisposable
    {
        /// <summary>Steam's largest unreliable message, and the session's max_datagram_size.</summary>
        public const int MaxDatagramSize = 1200;

        /// <summary>The identity type of a SteamID (k_ESteamNetworkingIdentityType_SteamID).</summary>
        private const int IdentityTypeSteamId = 16;

        private readonly TwSession _session;
        private readonly int _channel;
        private readonly IntPtr[] _messages;
        private readonly TwDatagramBatch _in;
        private readonly TwDatagramBatch _out;
        private readonly ulong[] _expected;
        private readonly SteamNetworkingIdentity[] _identities;
        private int _expectedCount;
        private Callback<SteamNetworkingMessagesSessionRequest_t> _sessionRequest;

        // Where SteamNetworkingMessage_t keeps what Receive reads, in the native layout
        // Steamworks.NET marshals it with. The SteamID of an identity is its 64-bit union,
        // right after m_eType and m_cbSize (steamnetworkingtypes.h, packed to 1).
        private static readonly int s_dataAt = (int)Marshal.OffsetOf(typeof(SteamNetworkingMessage_t), "m_pData");
        private static readonly int s_sizeAt = (int)Marshal.OffsetOf(typeof(SteamNetworkingMessage_t), "m_cbSize");
        private static readonly int s_peerAt = (int)Marshal.OffsetOf(typeof(SteamNetworkingMessage_t), "m_identityPeer");
        private static readonly int s_timeAt = (int)Marshal.OffsetOf(typeof(SteamNetworkingMessage_t), "m_usecTimeReceived");
        private const int SteamId64InIdentity = 8;

        /// <summary>Datagrams handed to the session.</summary>
        public long Received { get; private set; }
        /// <summary>Datagrams given to SendMessageToUser that it accepted.</summary>
        public long Sent { get; private set; }
        /// <summary>SendMessageToUser answers other than k_EResultOK (the datagram is lost; the protocol recovers).</summary>
        public long SendFailures { get; private set; }
        /// <summary>Messages from, or datagrams to, a SteamID the match does not expect: dropped.</summary>
        public long Strangers { get; private set; }
        /// <summary>Session requests refused (not an expected SteamID).</summary>
        public long RefusedRequests { get; private set; }

        /// <summary>
        /// Sets config's bind address to "remote:&lt;local SteamID&gt;" and its largest datagram to
        /// 1200 bytes. Call before creating the session (P2P, RELAY_SERVER or RELAY_CLIENT).
        /// </summary>
        public static void Bind(ref TwSessionConfig config, CSteamID local)
        {
            config.SetBindAddress(Address(local));
            config.Host.MaxDatagramSize = MaxDatagramSize;
        }

        /// <summary>A player's address for the session: "remote:&lt;steamid64&gt;" (setup time: allocates a string).</summary>
        public static string Address(CSteamID player)
        {
            return "remote:" + player.m_SteamID.ToString(System.Globalization.CultureInfo.InvariantCulture);
        }

        /// <summary>
        /// A carrier for session (bound with <see cref="Bind"/>) on Steam channel channel
        /// (both ends use the same), accepting sessions from the SteamIDs in expected only.
        /// Registers the session-request callback; Dispose unregisters it.
        /// </summary>
        public SteamCarrier(TwSession session, CSteamID[] expected, int channel = 0, int batch = 64)
        {
            if (session == null)
            {
                throw new ArgumentNullException("session");
            }
            if (expected == null)
            {
                throw new ArgumentNullException("expected");
            }
            _session = session;
            _channel = channel;
            _messages = new IntPtr[batch];
            _in = new TwDatagramBatch(batch);
            _out = new TwDatagramBatch(batch);
            _expected = new ulong[Math.Max(expected.Length, 1) + 16];
            _identities = new SteamNetworkingIdentity[_expected.Length];
            foreach (CSteamID id in expected)
            {
                Expect(id);
            }
            _sessionRequest = Callback<SteamNetworkingMessagesSessionRequest_t>.Create(OnSessionRequest);
        }

        /// <summary>Adds a SteamID to those the match expects (a player joining a relay server later).</summary>
        public void Expect(CSteamID player)
        {
            ulong id = player.m_SteamID;
            if (IndexOf(id) >= 0)
            {
                return;
            }
            if (_expectedCount == _expected.Length)
            {
                throw new InvalidOperationException("SteamCarrier: no room for another expected player");
            }
            _expected[_expectedCount] = id;
            _identities[_expectedCount] = new SteamNetworkingIdentity();
            _identities[_expectedCount].SetSteamID64(id);
            _expectedCount++;
        }

        /// <summary>Removes a SteamID (a player who left for good) and closes its Steam session.</summary>
        public void Forget(CSteamID player)
        {
            int i = IndexOf(player.m_SteamID);
            if (i < 0)
            {
                return;
            }
            SteamNetworkingMessages.CloseSessionWithUser(ref _identities[i]);
            _expectedCount--;
            _expected[i] = _expected[_expectedCount];
            _identities[i] = _identities[_expectedCount];
        }

        /// <summary>
        /// Reads every message waiting on the channel, hands those from expected players to the
        /// session with their age (now minus m_usecTimeReceived), and releases them. Call once
        /// a frame before the session loop.
        /// </summary>
        public void Receive()
        {
            int n;
            do
            {
                n = SteamNetworkingMessages.ReceiveMessagesOnChannel(_channel, _messages, _messages.Length);
                if (n <= 0)
                {
                    return;
                }
                long now = (long)SteamNetworkingUtils.GetLocalTimestamp();
                _in.Clear();
                for (int i = 0; i < n; i++)
                {
                    IntPtr m = _messages[i];
                    try
                    {
                        ulong from = SenderOf(m);
                        int size = Marshal.ReadInt32(m, s_sizeAt);
                        if (from == 0 || IndexOf(from) < 0 || size <= 0 || size > MaxDatagramSize)
                        {
                            Strangers++;
                            continue;
                        }
                        long age = now - Marshal.ReadInt64(m, s_timeAt);
                        uint ageUs = age <= 0 ? 0u : age >= uint.MaxValue ? uint.MaxValue : (uint)age;
                        if (!_in.Add(from, Marshal.ReadIntPtr(m, s_dataAt), size, ageUs))
                        {
                            Received += _in.Push(_session);
                            _in.Add(from, Marshal.ReadIntPtr(m, s_dataAt), size, ageUs);
                        }
                    }
                    finally
                    {
                        // The bytes were copied into the batch: the message may go now.
                        SteamNetworkingMessage_t.Release(m);
                        _messages[i] = IntPtr.Zero;
                    }
                }
                if (_in.Count > 0)
                {
                    Received += _in.Push(_session);
                }
            } while (n == _messages.Length);
        }

        /// <summary>
        /// Sends everything the session has for its peers, unreliable and without Nagle delay.
        /// Call once a frame after the session loop (after Advance, which flushes).
        /// </summary>
        public void Send()
        {
            do
            {
                _out.Pull(_session);
                for (int i = 0; i < _out.Count; i++)
                {
                    int k = IndexOf(_out.Remote(i));
                    if (k < 0)
                    {
                        Strangers++;
                        continue;
                    }
                    EResult r = SteamNetworkingMessages.SendMessageToUser(ref _identities[k], _out.Data(i), (uint)_out.Length(i),
                                                                          Constants.k_nSteamNetworkingSend_UnreliableNoNagle, _channel);
                    if (r == EResult.k_EResultOK)
                    {
                        Sent++;
                    }
                    else
                    {
                        SendFailures++;
                    }
                }
            } while (_out.MayHaveMore);
        }

        /// <summary>Unregisters the callback, closes the players' Steam sessions and frees the batches.</summary>
        public void Dispose()
        {
            if (_sessionRequest != null)
            {
                _sessionRequest.Dispose();
                _sessionRequest = null;
            }
            for (int i = 0; i < _expectedCount; i++)
            {
                SteamNetworkingMessages.CloseSessionWithUser(ref _identities[i]);
            }
            _expectedCount = 0;
            _in.Dispose();
            _out.Dispose();
        }

        private void OnSessionRequest(SteamNetworkingMessagesSessionRequest_t request)
        {
            SteamNetworkingIdentity who = request.m_identityRemote;
            ulong id = who.GetSteamID64();
            if (id != 0 && IndexOf(id) >= 0)
            {
                SteamNetworkingMessages.AcceptSessionWithUser(ref who);
            }
            else
            {
                RefusedRequests++; // ignored: Steam keeps asking while the stranger sends, and never connects it
            }
        }

        /// <summary>The sender's SteamID, or 0 when the message's identity is not a SteamID.</summary>
        private static ulong SenderOf(IntPtr message)
        {
            if (Marshal.ReadInt32(message, s_peerAt) != IdentityTypeSteamId)
            {
                return 0;
            }
            return (ulong)Marshal.ReadInt64(message, s_peerAt + SteamId64InIdentity);
        }

        private int IndexOf(ulong id)
        {
            for (int i = 0; i < _expectedCount; i++)
            {
                if (_expected[i] == id)
                {
                    return i;
                }
            }
            return -1;
        }
    }
}
#endif
