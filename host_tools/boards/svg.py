"""A small dimensioned-drawing writer: millimetres in, SVG text out.

The hardware drawings are committed and compared byte for byte with the
generator's output (tests), so the output must be a pure function of the
numbers: no timestamps, no ids from counters shared between drawings, and
every coordinate rounded the same way. Drawing frame: x to the right, z up
(as in hardware/shoe/geometry.toml); SVG's y runs down, so z is flipped here
once and nowhere else.
"""

from xml.sax.saxutils import escape

INK = "#222"
THIN = 0.8
DIM = "#1f4e9c"
FONT = "DejaVu Sans, Arial, sans-serif"


def _n(v):
    """A coordinate as text: two decimals at most, no trailing zeros."""
    s = "%.2f" % v
    s = s.rstrip("0").rstrip(".")
    return "0" if s == "-0" else s


class Sheet:
    """One view: mm drawing coordinates mapped to pixels at `scale` px/mm,
    with the drawing's (x0, z0) at the pixel (left, top + height)."""

    def __init__(self, width_px, height_px, scale, x0, z0, left, bottom):
        self.width, self.height = width_px, height_px
        self.scale = scale
        self.x0, self.z0 = x0, z0
        self.left, self.bottom = left, bottom
        self.items = []
        self.defs = []

    def px(self, x, z):
        return (self.left + (x - self.x0) * self.scale, self.bottom - (z - self.z0) * self.scale)

    # -- shapes, in drawing millimetres ----------------------------------------

    def rect(self, x, z, w, h, fill="none", stroke=INK, width=1.2, dash=None, opacity=None):
        x1, y1 = self.px(x, z + h)
        extra = ' stroke-dasharray="%s"' % dash if dash else ""
        if opacity is not None:
            extra += ' fill-opacity="%s"' % _n(opacity)
        self.items.append('<rect x="%s" y="%s" width="%s" height="%s" fill="%s" stroke="%s" '
                          'stroke-width="%s"%s/>' % (_n(x1), _n(y1), _n(w * self.scale),
                                                     _n(h * self.scale), fill, stroke, _n(width), extra))

    def line(self, xa, za, xb, zb, stroke=INK, width=1.2, dash=None):
        (x1, y1), (x2, y2) = self.px(xa, za), self.px(xb, zb)
        extra = ' stroke-dasharray="%s"' % dash if dash else ""
        self.items.append('<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="%s"%s/>'
                          % (_n(x1), _n(y1), _n(x2), _n(y2), stroke, _n(width), extra))

    def polygon(self, points, fill="none", stroke=INK, width=1.2):
        pts = " ".join("%s,%s" % tuple(_n(c) for c in self.px(x, z)) for x, z in points)
        self.items.append('<polygon points="%s" fill="%s" stroke="%s" stroke-width="%s"/>'
                          % (pts, fill, stroke, _n(width)))

    def circle(self, x, z, r, fill="none", stroke=INK, width=1.2):
        cx, cy = self.px(x, z)
        self.items.append('<circle cx="%s" cy="%s" r="%s" fill="%s" stroke="%s" stroke-width="%s"/>'
                          % (_n(cx), _n(cy), _n(r * self.scale), fill, stroke, _n(width)))

    def text(self, x, z, s, size=11, anchor="start", weight="normal", fill=INK, dx=0, dy=0):
        px, py = self.px(x, z)
        self.text_px(px + dx, py + dy, s, size, anchor, weight, fill)

    def text_px(self, px, py, s, size=11, anchor="start", weight="normal", fill=INK, bg=False):
        if bg:
            # A white ground under a label that sits on hatching or lines.
            w = 0.56 * size * len(s)
            x = px - {"start": 0, "middle": w / 2, "end": w}[anchor]
            self.items.append('<rect x="%s" y="%s" width="%s" height="%s" fill="white" fill-opacity="0.88"/>'
                              % (_n(x - 2), _n(py - size), _n(w + 4), _n(size + 4)))
        self.items.append('<text x="%s" y="%s" font-size="%s" text-anchor="%s" font-weight="%s" '
                          'fill="%s">%s</text>' % (_n(px), _n(py), size, anchor, weight, fill, escape(s)))

    def hatch(self, name, colour, spacing=6, angle=45):
        """A hatch pattern the view's fills can name as url(#name)."""
        self.defs.append('<pattern id="%s" width="%d" height="%d" patternUnits="userSpaceOnUse" '
                         'patternTransform="rotate(%d)"><line x1="0" y1="0" x2="0" y2="%d" stroke="%s" '
                         'stroke-width="1"/></pattern>' % (name, spacing, spacing, angle, spacing, colour))
        return "url(#%s)" % name

    # -- dimensions --------------------------------------------------------------

    def _arrow(self, x, y, dx, dy):
        """An arrowhead at pixel (x, y) pointing along the unit vector (dx, dy)."""
        L, W = 7, 2.6
        bx, by = x - dx * L, y - dy * L
        pts = [(x, y), (bx - dy * W, by + dx * W), (bx + dy * W, by - dx * W)]
        self.items.append('<polygon points="%s" fill="%s"/>'
                          % (" ".join("%s,%s" % (_n(a), _n(b)) for a, b in pts), DIM))

    def dim_h(self, xa, xb, z, offset, label, size=11):
        """A horizontal dimension between xa and xb, measured at height z,
        drawn `offset` pixels below (positive) or above (negative) it."""
        (x1, y), (x2, _) = self.px(xa, z), self.px(xb, z)
        yd = y + offset
        for x in (x1, x2):
            self.items.append('<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="%s"/>'
                              % (_n(x), _n(y + (4 if offset > 0 else -4)), _n(x),
                                 _n(yd + (4 if offset > 0 else -4)), DIM, _n(THIN)))
        self.items.append('<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="%s"/>'
                          % (_n(x1), _n(yd), _n(x2), _n(yd), DIM, _n(THIN)))
        self._arrow(x1, yd, -1, 0)
        self._arrow(x2, yd, 1, 0)
        self.text_px((x1 + x2) / 2, yd - 4, label, size, "middle", fill=DIM, bg=True)

    def dim_v(self, za, zb, x, offset, label, size=11, side="right"):
        """A vertical dimension between za and zb at x, `offset` pixels to
        the right (positive) or left (negative)."""
        (xp, y1), (_, y2) = self.px(x, za), self.px(x, zb)
        xd = xp + offset
        for y in (y1, y2):
            self.items.append('<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="%s"/>'
                              % (_n(xp + (4 if offset > 0 else -4)), _n(y), _n(xd + (4 if offset > 0 else -4)),
                                 _n(y), DIM, _n(THIN)))
        self.items.append('<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="%s"/>'
                          % (_n(xd), _n(y1), _n(xd), _n(y2), DIM, _n(THIN)))
        self._arrow(xd, y1, 0, 1)
        self._arrow(xd, y2, 0, -1)
        if side == "right":
            self.text_px(xd + 5, (y1 + y2) / 2 + 4, label, size, "start", fill=DIM, bg=True)
        else:
            self.text_px(xd - 5, (y1 + y2) / 2 + 4, label, size, "end", fill=DIM, bg=True)

    def callout(self, x, z, tx_px, ty_px, label, size=11, anchor="start"):
        """A leader from the point (x, z) to a label placed at a pixel."""
        px, py = self.px(x, z)
        self.items.append('<circle cx="%s" cy="%s" r="2" fill="%s"/>' % (_n(px), _n(py), DIM))
        self.items.append('<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="%s"/>'
                          % (_n(px), _n(py), _n(tx_px), _n(ty_px), DIM, _n(THIN)))
        for k, line in enumerate(label.split("\n")):
            self.text_px(tx_px + (4 if anchor == "start" else -4), ty_px + 4 + k * (size + 3), line, size, anchor,
                         bg=True)

    def render(self, title, subtitle, generator):
        head = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" '
                'font-family="%s">' % (self.width, self.height, self.width, self.height, FONT),
                '<!-- Generated by %s: do not edit. -->' % generator,
                '<rect width="100%" height="100%" fill="white"/>']
        if self.defs:
            head.append("<defs>%s</defs>" % "".join(self.defs))
        head.append('<text x="20" y="26" font-size="15" font-weight="bold" fill="%s">%s</text>'
                    % (INK, escape(title)))
        head.append('<text x="20" y="44" font-size="11" fill="#666">%s</text>' % escape(subtitle))
        return "\n".join(head + self.items + ["</svg>"]) + "\n"
