// Stand-ins for the few APIs of Unity's Input System package (com.unity.inputsystem,
// assembly Unity.InputSystem) that the package samples read, with the same namespaces,
// names and types: scripts/unity-package-check.sh compiles each sample against them with
// the package's define set, as Unity does when the package is installed. Test-only.
namespace UnityEngine.InputSystem.Controls
{
    public class ButtonControl
    {
        public bool isPressed { get; set; }
    }

    public class KeyControl : ButtonControl
    {
    }

    public class DpadControl
    {
        public ButtonControl up { get; } = new ButtonControl();
        public ButtonControl down { get; } = new ButtonControl();
        public ButtonControl left { get; } = new ButtonControl();
        public ButtonControl right { get; } = new ButtonControl();
    }
}

namespace UnityEngine.InputSystem
{
    using UnityEngine.InputSystem.Controls;

    public class Keyboard
    {
        public static Keyboard current { get; set; }
        public KeyControl leftArrowKey { get; } = new KeyControl();
        public KeyControl rightArrowKey { get; } = new KeyControl();
        public KeyControl upArrowKey { get; } = new KeyControl();
        public KeyControl downArrowKey { get; } = new KeyControl();
        public KeyControl aKey { get; } = new KeyControl();
        public KeyControl dKey { get; } = new KeyControl();
        public KeyControl wKey { get; } = new KeyControl();
        public KeyControl sKey { get; } = new KeyControl();
    }

    public class Gamepad
    {
        public static Gamepad current { get; set; }
        public DpadControl dpad { get; } = new DpadControl();
    }
}
