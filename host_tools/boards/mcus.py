"""Pin and peripheral facts of the supported MCUs, as data.

The validator checks boards.toml against these tables instead of trusting the
person who typed a pin number. They are transcribed from the vendors' data
sheets so that a reviewer can hold them against the source line by line:

* RP2040: datasheet section 2.19.2, "Function Select" table. Every GPIO has
  fixed SPI (F1), UART (F2) and I2C (F3) functions; a bus works only on the
  pins the table gives its signals.
* ESP32-S3: datasheet chapter 2 ("Pins") and the ESP32-S3-WROOM-1 module
  sheet. The GPIO matrix routes UART, I2C and SPI signals to any GPIO, so the
  constraint is which GPIOs exist and which are taken by strapping, the
  module's flash/PSRAM, native USB and the boot console.
"""

# RP2040 GPIO n -> (SPI function, UART function, I2C function), from the
# function-select table. "SPI0 RX" is MISO, "SPI0 TX" is MOSI.
RP2040_FUNCTIONS = (
    ("SPI0 RX", "UART0 TX", "I2C0 SDA"),    # GP0
    ("SPI0 CSn", "UART0 RX", "I2C0 SCL"),   # GP1
    ("SPI0 SCK", "UART0 CTS", "I2C1 SDA"),  # GP2
    ("SPI0 TX", "UART0 RTS", "I2C1 SCL"),   # GP3
    ("SPI0 RX", "UART1 TX", "I2C0 SDA"),    # GP4
    ("SPI0 CSn", "UART1 RX", "I2C0 SCL"),   # GP5
    ("SPI0 SCK", "UART1 CTS", "I2C1 SDA"),  # GP6
    ("SPI0 TX", "UART1 RTS", "I2C1 SCL"),   # GP7
    ("SPI1 RX", "UART1 TX", "I2C0 SDA"),    # GP8
    ("SPI1 CSn", "UART1 RX", "I2C0 SCL"),   # GP9
    ("SPI1 SCK", "UART1 CTS", "I2C1 SDA"),  # GP10
    ("SPI1 TX", "UART1 RTS", "I2C1 SCL"),   # GP11
    ("SPI1 RX", "UART0 TX", "I2C0 SDA"),    # GP12
    ("SPI1 CSn", "UART0 RX", "I2C0 SCL"),   # GP13
    ("SPI1 SCK", "UART0 CTS", "I2C1 SDA"),  # GP14
    ("SPI1 TX", "UART0 RTS", "I2C1 SCL"),   # GP15
    ("SPI0 RX", "UART0 TX", "I2C0 SDA"),    # GP16
    ("SPI0 CSn", "UART0 RX", "I2C0 SCL"),   # GP17
    ("SPI0 SCK", "UART0 CTS", "I2C1 SDA"),  # GP18
    ("SPI0 TX", "UART0 RTS", "I2C1 SCL"),   # GP19
    ("SPI0 RX", "UART1 TX", "I2C0 SDA"),    # GP20
    ("SPI0 CSn", "UART1 RX", "I2C0 SCL"),   # GP21
    ("SPI0 SCK", "UART1 CTS", "I2C1 SDA"),  # GP22
    ("SPI0 TX", "UART1 RTS", "I2C1 SCL"),   # GP23
    ("SPI1 RX", "UART1 TX", "I2C0 SDA"),    # GP24
    ("SPI1 CSn", "UART1 RX", "I2C0 SCL"),   # GP25
    ("SPI1 SCK", "UART1 CTS", "I2C1 SDA"),  # GP26
    ("SPI1 TX", "UART1 RTS", "I2C1 SCL"),   # GP27
    ("SPI1 RX", "UART0 TX", "I2C0 SDA"),    # GP28
    ("SPI1 CSn", "UART0 RX", "I2C0 SCL"),   # GP29
)

# ESP32-S3 GPIOs that exist: 0-21 and 26-48 (22-25 are not bonded out).
ESP32S3_GPIOS = tuple(range(0, 22)) + tuple(range(26, 49))

# GPIOs a board must not use for shoe wiring, with the reason the
# validator prints.
ESP32S3_UNUSABLE = {
    0: "strapping pin (boot mode)",
    3: "strapping pin (JTAG signal source)",
    45: "strapping pin (VDD_SPI voltage)",
    46: "strapping pin (boot mode / ROM messages)",
    19: "native USB D- (host link and REPL)",
    20: "native USB D+ (host link and REPL)",
    26: "in-package flash/PSRAM SPICS1",
    27: "module flash SPIHD",
    28: "module flash SPIWP",
    29: "module flash SPICS0",
    30: "module flash SPICLK",
    31: "module flash SPIQ",
    32: "module flash SPID",
    33: "octal flash/PSRAM SPIIO4 on -R8/-N16R8 modules",
    34: "octal flash/PSRAM SPIIO5 on -R8/-N16R8 modules",
    35: "octal flash/PSRAM SPIIO6 on -R8/-N16R8 modules",
    36: "octal flash/PSRAM SPIIO7 on -R8/-N16R8 modules",
    37: "octal flash/PSRAM SPIDQS on -R8/-N16R8 modules",
    43: "UART0 TXD: boot log and REPL via the DevKitC's USB-UART bridge",
    44: "UART0 RXD: boot log and REPL via the DevKitC's USB-UART bridge",
}


class Mcu:
    """What the validator needs to know about one MCU."""

    def __init__(self, name, prefix, gpios, unusable, bus_ids, fixed_functions):
        self.name = name
        self.prefix = prefix
        self.gpios = gpios
        self.unusable = unusable
        # bus kind ("uart", "i2c", "spi") -> MicroPython peripheral ids
        self.bus_ids = bus_ids
        # None when the GPIO matrix lets any usable pin carry any signal
        self.fixed_functions = fixed_functions

    def label(self, pin):
        return "%s%d" % (self.prefix, pin)

    def pin_range(self):
        return "%s%d-%s%d" % (self.prefix, self.gpios[0], self.prefix, self.gpios[-1])

    def function_of(self, pin, kind):
        """The fixed function the pin has for a bus kind, e.g. "UART0 TX"."""
        column = {"spi": 0, "uart": 1, "i2c": 2}[kind]
        return self.fixed_functions[pin][column]

    def pins_with(self, function):
        return [p for p in self.gpios if function in self.fixed_functions[p]]


MCUS = {
    "RP2040": Mcu("RP2040", "GP", tuple(range(30)), {},
                  {"uart": (0, 1), "i2c": (0, 1), "spi": (0, 1)}, RP2040_FUNCTIONS),
    # MicroPython's esp32 port numbers UART 0-2, I2C 0-1 and SPI 1-2 (SPI2/SPI3).
    "ESP32-S3": Mcu("ESP32-S3", "GPIO", ESP32S3_GPIOS, ESP32S3_UNUSABLE,
                    {"uart": (0, 1, 2), "i2c": (0, 1), "spi": (1, 2)}, None),
}

# Signal roles a bus's pin keys play, and the name the RP2040 function table
# gives each role. SPI chip select is driven as a plain GPIO by the driver,
# so it is not tied to the "CSn" function.
BUS_ROLES = {
    "uart": {"tx": "TX", "rx": "RX"},
    "i2c": {"sda": "SDA", "scl": "SCL"},
    "spi": {"sck": "SCK", "mosi": "TX", "miso": "RX"},
}
BUS_GPIO_KEYS = {"uart": (), "i2c": (), "spi": ("cs",)}
