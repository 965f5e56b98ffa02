#if TICKWIRE_INPUT_SYSTEM && ENABLE_INPUT_SYSTEM
using UnityEngine.InputSystem;
#else
using UnityEngine;
#endif

namespace Tickwire.Samples.Rendezvous
{
    /// <summary>
    /// The sample's controls: the arrow keys, WASD or a gamepad's d-pad, as -1, 0 or 1 per
    /// axis. With the Input System package (com.unity.inputsystem) installed and enabled
    /// (Project Settings, Player, Active Input Handling: "Input System Package" or "Both"),
    /// it reads the keyboard and the gamepad through it; without the package, the legacy
    /// Input Manager's Horizontal and Vertical axes. The asmdef defines
    /// TICKWIRE_INPUT_SYSTEM when the package is present (versionDefines).
    /// </summary>
    internal static class SampleInput
    {
        public static void Read(out int dx, out int dy)
        {
#if TICKWIRE_INPUT_SYSTEM && ENABLE_INPUT_SYSTEM
            Keyboard k = Keyboard.current;
            Gamepad g = Gamepad.current;
            bool left = (k != null && (k.leftArrowKey.isPressed || k.aKey.isPressed)) || (g != null && g.dpad.left.isPressed);
            bool right = (k != null && (k.rightArrowKey.isPressed || k.dKey.isPressed)) || (g != null && g.dpad.right.isPressed);
            bool down = (k != null && (k.downArrowKey.isPressed || k.sKey.isPressed)) || (g != null && g.dpad.down.isPressed);
            bool up = (k != null && (k.upArrowKey.isPressed || k.wKey.isPressed)) || (g != null && g.dpad.up.isPressed);
            dx = (right ? 1 : 0) - (left ? 1 : 0);
            dy = (up ? 1 : 0) - (down ? 1 : 0);
#else
            float h = Input.GetAxisRaw("Horizontal");
            float v = Input.GetAxisRaw("Vertical");
            dx = h < 0 ? -1 : (h > 0 ? 1 : 0);
            dy = v < 0 ? -1 : (v > 0 ? 1 : 0);
#endif
        }
    }
}
