/// The page's only stylesheet, inline. Series colours are the Okabe–Ito palette (distinguishable
/// with the common colour-vision deficiencies); ordered values (coarse levels, heat-map bins) use
/// one hue from light to dark. Text meets WCAG AA contrast on white. No web fonts: the system's
/// sans-serif.
enum ReportStyle {
    /// How many ad networks get a colour of their own; the rest share the grey "other" series.
    static let seriesColours = 7

    static func series(_ index: Int) -> String { index < seriesColours ? "s\(index)" : "s-other" }

    static let css: StaticString = """
        :root { color-scheme: light; --ink: #1a1a1a; --muted: #555; --rule: #d9d9d9; --panel: #f7f7f8; }
        * { box-sizing: border-box; }
        body { margin: 0; font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, "DejaVu Sans", sans-serif;
               color: var(--ink); background: #fff; }
        header.top, main, footer { max-width: 1280px; margin: 0 auto; padding: 0 28px; }
        header.top { padding-top: 16px; padding-bottom: 6px; border-bottom: 1px solid var(--rule); }
        h1 { font-size: 24px; margin: 0 0 2px; }
        .banner { border-left: 4px solid #0b5394; background: #eef4fb; padding: 6px 14px; margin: 12px 0 0; font-size: 14px; }
        .banner.development { border-left-color: #6a3d9a; background: #f4effa; }
        code { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: 13px; white-space: nowrap; }
        h2 { font-size: 20px; margin: 40px 0 4px; padding-top: 12px; border-top: 1px solid var(--rule); }
        h2.first { font-size: 18px; margin: 14px 0 4px; padding-top: 0; border-top: none; }
        h3 { font-size: 16px; margin: 20px 0 6px; }
        p { margin: 6px 0; }
        .meta, .note, caption, footer { color: var(--muted); }
        .note { max-width: 78ch; }
        nav.contents { margin: 16px 0; font-size: 14px; }
        nav.contents a { margin-right: 14px; color: #0b5394; }
        .cards { display: flex; flex-wrap: wrap; gap: 10px; margin: 12px 0 6px; }
        .card { flex: 1 1 140px; background: var(--panel); border: 1px solid #e3e3e6;
                border-radius: 8px; padding: 6px 12px; }
        .card .kpi-name { font-size: 13px; color: var(--muted); margin: 0; }
        .card .kpi-value { font-size: 22px; font-weight: 650; margin: 0; font-variant-numeric: tabular-nums; white-space: nowrap; }
        .card .kpi-detail { font-size: 12.5px; color: var(--muted); margin: 0; }
        .aside { font-size: 14px; color: var(--muted); margin: 4px 0 0; }
        .aside strong { color: var(--ink); font-variant-numeric: tabular-nums; }
        .warning { border-left: 4px solid #b00020; background: #fdecee; padding: 6px 14px; margin: 8px 0 0; font-size: 14px; }
        .notice { border-left: 4px solid #b35900; background: #fff6ec; padding: 6px 14px; margin: 10px 0 0; font-size: 14px; }
        .notice p { margin: 0; }
        .notice ul { margin: 4px 0; padding-left: 20px; }
        .empty { border: 1px dashed #bbb; border-radius: 6px; padding: 22px; color: var(--muted); text-align: center; }
        .panel { display: grid; grid-template-columns: minmax(0, 3fr) minmax(0, 2fr); gap: 24px; align-items: start; margin-top: 8px; }
        .panel.stacked { grid-template-columns: minmax(0, 1fr); }
        @media (max-width: 1000px) { .panel { grid-template-columns: minmax(0, 1fr); } }
        figure { margin: 0; }
        svg.chart { width: 100%; height: auto; display: block; font-size: 12px; }
        .figures { border: 1px solid #e3e3e6; border-radius: 6px; }
        table { border-collapse: collapse; width: 100%; font-size: 13px; font-variant-numeric: tabular-nums; }
        caption { text-align: left; font-size: 12.5px; padding: 6px 8px; caption-side: top; }
        th, td { padding: 3px 8px; border-bottom: 1px solid #ececec; vertical-align: top; }
        td, th { white-space: nowrap; }
        td.wrap, th.wrap, thead th, caption { white-space: normal; overflow-wrap: break-word; }
        .wrap { min-width: 14em; }
        thead th { background: #f0f0f2; font-weight: 600; }
        tfoot th, tfoot td { font-weight: 650; border-top: 1px solid #bbb; }
        .n { text-align: right; }
        .t { text-align: left; }
        td.none { color: var(--muted); text-align: center; }
        .legend { list-style: none; padding: 0; margin: 6px 0; display: flex; flex-wrap: wrap; gap: 4px 16px; font-size: 13px; }
        .legend li { display: flex; align-items: center; gap: 6px; white-space: nowrap; }
        .swatch { display: inline-block; width: 12px; height: 12px; border-radius: 2px; flex: none; }
        .swatch-line { display: inline-block; width: 18px; height: 0; border-top: 3px solid; flex: none; }
        .swatch.dashed, .swatch-line.dashed { border-top-style: dashed; }
        .tick { fill: #444; font-size: 11px; }
        .row-label { fill: var(--ink); font-size: 12px; }
        .row-sublabel { fill: var(--muted); font-size: 10.5px; }
        .panel-title { fill: var(--ink); font-size: 12px; font-weight: 600; }
        .value-label { fill: #333; font-size: 11px; }
        .cell-note { fill: #777; font-size: 11px; }
        .in-bar { font-size: 10.5px; pointer-events: none; }
        .axis { stroke: #888; stroke-width: 1; }
        .grid { stroke: #e6e6e6; stroke-width: 1; }
        .row-rule { stroke: #f0f0f0; stroke-width: 1; }
        rect { stroke: #fff; stroke-width: 0.5; }
        rect:hover, circle:hover, .revenue-cell:hover { opacity: 0.8; }
        .unavailable { fill: #f1f1f1; stroke: #d0d0d0; stroke-dasharray: 3 3; }
        .s0 { fill: #0072b2; stroke: #0072b2; background: #0072b2; border-color: #0072b2; color: #0072b2; }
        .s1 { fill: #e69f00; stroke: #e69f00; background: #e69f00; border-color: #e69f00; color: #e69f00; }
        .s2 { fill: #009e73; stroke: #009e73; background: #009e73; border-color: #009e73; color: #009e73; }
        .s3 { fill: #cc79a7; stroke: #cc79a7; background: #cc79a7; border-color: #cc79a7; color: #cc79a7; }
        .s4 { fill: #56b4e9; stroke: #56b4e9; background: #56b4e9; border-color: #56b4e9; color: #56b4e9; }
        .s5 { fill: #d55e00; stroke: #d55e00; background: #d55e00; border-color: #d55e00; color: #d55e00; }
        .s6 { fill: #f0e442; stroke: #8a7f00; background: #f0e442; border-color: #c9bd1e; color: #c9bd1e; }
        .s-other { fill: #8c8c8c; stroke: #8c8c8c; background: #8c8c8c; border-color: #8c8c8c; color: #8c8c8c; }
        .s-all { fill: #1a1a1a; stroke: #1a1a1a; background: #1a1a1a; border-color: #1a1a1a; color: #1a1a1a; }
        rect.s0, rect.s1, rect.s2, rect.s3, rect.s4, rect.s5, rect.s-other { stroke: #fff; }
        rect.s6 { stroke: #8a7f00; }
        .line { fill: none; stroke-width: 2; }
        .line.dashed { stroke-dasharray: 6 4; }
        .marker { stroke: #fff; stroke-width: 1; }
        .coarse-0 { fill: #c6dbef; background: #c6dbef; }
        .coarse-1 { fill: #6baed6; background: #6baed6; }
        .coarse-2 { fill: #08519c; background: #08519c; }
        .coarse-text-0, .coarse-text-1 { fill: #0b1f33; }
        .coarse-text-2 { fill: #fff; }
        .heat-0 { fill: #f4f4f5; stroke: none; }
        .heat-1 { fill: #deebf7; background: #deebf7; }
        .heat-2 { fill: #c6dbef; background: #c6dbef; }
        .heat-3 { fill: #9ecae1; background: #9ecae1; }
        .heat-4 { fill: #6baed6; background: #6baed6; }
        .heat-5 { fill: #3182bd; background: #3182bd; }
        .heat-6 { fill: #08519c; background: #08519c; }
        rect.heat-1, rect.heat-2, rect.heat-3, rect.heat-4, rect.heat-5, rect.heat-6 { stroke: none; }
        .estimate { fill: #0072b2; opacity: 0.85; stroke: none; }
        .range { stroke: #1a1a1a; stroke-width: 1.5; }
        .range-arrow { fill: #1a1a1a; }
        .bar-reason { fill: #b35900; }
        .bar-share { fill: #0072b2; }
        footer { font-size: 13px; margin-top: 48px; padding-top: 12px; padding-bottom: 28px; border-top: 1px solid var(--rule); }
        @media print { .figures { max-height: none; overflow: visible; } h2 { break-before: auto; } .panel { break-inside: avoid; } }
        """
}
