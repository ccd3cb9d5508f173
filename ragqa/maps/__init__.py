"""The collection as a picture: every paper placed in two dimensions from the vectors it
already has, grouped into named themes (`map`), and a topic's papers counted per year
(`trends`). Only data: the faces draw it (PNG/SVG, the HTML file, the web page's Map view)."""
